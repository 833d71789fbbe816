"""`DeduplicateStep`: near-duplicate pairs by embedding, an LLM judge per pair, the decision applied.

Pairs come from the embedding cosine of active skills of one section (`ace.deduplication.detector`). With
`scope="changed"` (the default, for use after `UpdateStep`) only pairs involving a skill the session just
changed are considered: the cost is one vector against the section, not all pairs of a 5,000-skill book.
Pairs already decided KEEP (stored on the skillbook) are never asked again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from ace.core.insight_source import InsightSource
from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.deduplication.detector import DEFAULT_THRESHOLD, SimilarPair, find_similar_pairs
from ace.deduplication.operations import AppliedDecision, apply_decision, check_decision
from ace.deduplication.prompts import DEDUP_DECISION_TYPES, DEDUP_PROMPT, DedupDecision, dedup_task_prompt
from ace.embeddings.base import Embedder, l2_normalize
from ace.exceptions import SkillbookError
from ace.llm import infer_model
from ace.observability import ace_span
from ace.pipeline.context import StepContext, source_of
from ace.pipeline.registry import StepEnvironment, StepFactory
from ace.retrieval.index import search_index

__all__ = ["DedupScope", "DeduplicateStep", "pairs_involving"]

DedupScope = Literal["changed", "all"]
_MARGIN = 5e-3
"""How far below the threshold the search index's candidates go: HNSW cosines are float16's (~1e-3 off)."""


@dataclass(frozen=True)
class _JudgeDeps:
    skillbook: Skillbook
    pair: tuple[str, str]


class DeduplicateStep:
    """Finds near-duplicate skills and lets an LLM decide MERGE / DELETE / UPDATE / KEEP for each pair."""

    name = "deduplicate"
    requires: frozenset[str] = frozenset({"skillbook", "epoch"})
    """With `scope="all"` (as registered); `scope="changed"` also reads the trace and the sample's `sm_result`."""
    provides: frozenset[str] = frozenset({"dedup_decisions"})

    def __init__(
        self,
        model: Model | str | None,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        scope: DedupScope = "changed",
        max_pairs: int = 5,
        embedder: Embedder | None = None,
        model_settings: ModelSettings | None = None,
        retries: int = 2,
    ) -> None:
        """Build the step.

        Args:
            model: The judge: a pydantic-ai model or a model string (`ace.llm.infer_model`, role `dedup`).
            threshold: Cosine at or above which two skills are a candidate pair.
            scope: `changed`: only pairs with a skill in `ctx.sm_result.changed_ids`; `all`: every pair.
            max_pairs: Most pairs judged per call, most similar first (the rest wait for the next call).
            embedder: Embedder for missing vectors (default: the skillbook search index's).
            model_settings: Settings for every judge request.
            retries: How often the judge may retry a decision that does not fit the pair.
        """
        if max_pairs < 1:
            raise ValueError(f"max_pairs must be at least 1, got {max_pairs}")
        self.threshold = threshold
        self.scope: DedupScope = scope
        self.max_pairs = max_pairs
        self.embedder = embedder
        if scope == "changed":
            self.requires = DeduplicateStep.requires | {"trace", "sm_result"}
        self.agent: Agent[_JudgeDeps, DedupDecision] = Agent(
            infer_model(model, role="dedup"),
            instructions=DEDUP_PROMPT,
            output_type=list(DEDUP_DECISION_TYPES),
            deps_type=_JudgeDeps,
            retries={"output": retries},
            model_settings=model_settings,
            name="dedup_judge",
        )
        self.agent.output_validator(_validate)

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Judge up to `max_pairs` candidate pairs and apply each decision; usage is added under `dedup`."""
        book = ctx.skillbook
        if self.scope == "changed":
            changed = ctx.sm_result.changed_ids if ctx.sm_result is not None else []
            pairs = pairs_involving(book, changed, threshold=self.threshold, embedder=self.embedder)
        else:
            pairs = find_similar_pairs(
                book, threshold=self.threshold, keep_pairs=book.keep_pairs, embedder=self.embedder
            )
        source = _source(ctx)
        applied: list[AppliedDecision] = []
        usage = RunUsage()
        touched: set[str] = set()
        for pair in pairs:
            if len(applied) >= self.max_pairs:
                break
            ids = (pair.first_id, pair.second_id)
            if touched & set(ids) or not all(_is_active(book, i) for i in ids):
                continue  # an earlier decision of this call changed one of them: re-detect next time
            with ace_span(
                "dedup.decision",
                {"ace.first_id": ids[0], "ace.second_id": ids[1], "ace.similarity": pair.similarity},
            ) as span:
                shown = (book.require_skill(ids[0]), book.require_skill(ids[1]))
                result = await self.agent.run(
                    dedup_task_prompt(shown[0], shown[1], pair.similarity),
                    deps=_JudgeDeps(skillbook=book, pair=ids),
                )
                usage = usage + result.usage
                with book.locked():
                    if _rewritten_since(book, shown):  # a concurrent session edited one: re-detect next time
                        span.set_attribute("ace.decision", "stale")
                        continue
                    done = apply_decision(book, ids, result.output, similarity=pair.similarity, source=source)
                span.set_attribute("ace.decision", done.kind)
            touched.update(done.changed_ids)
            applied.append(done)
        out = dataclasses.replace(ctx, dedup_decisions=ctx.dedup_decisions + tuple(applied))
        return out.with_usage("dedup", usage) if usage.requests else out


def _source(ctx: StepContext) -> InsightSource:
    """The provenance of the decisions: the sample's trace after a session, the epoch in an end-of-epoch pass."""
    if ctx.trace:
        return source_of(ctx)
    return InsightSource(
        trace_uid=f"deduplicate:epoch-{ctx.epoch}",
        source_system="ace.deduplicate",
        trace_id=f"epoch-{ctx.epoch}",
        epoch=ctx.epoch,
    )


def _validate(ctx: RunContext[_JudgeDeps], decision: DedupDecision) -> DedupDecision:
    """Send a decision that does not fit the pair back to the judge with the reason; nothing is applied yet."""
    try:
        check_decision(ctx.deps.skillbook, ctx.deps.pair, decision)
    except SkillbookError as e:
        raise ModelRetry(str(e)) from None
    return decision


def _rewritten_since(book: Skillbook, shown: tuple[Skill, Skill]) -> bool:
    """Whether either skill's text changed since the judge was shown it (its decision would overwrite the edit)."""
    now = [book.get_skill(s.id) for s in shown]
    return any(n is None or not n.same_text(s) for n, s in zip(now, shown, strict=True))


def _is_active(book: Skillbook, skill_id: str) -> bool:
    skill = book.get_skill(skill_id)
    return skill is not None and skill.visible


def pairs_involving(
    skillbook: Skillbook,
    skill_ids: Iterable[str],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    embedder: Embedder | None = None,
) -> list[SimilarPair]:
    """Pairs of active same-section skills, at least one of them in `skill_ids`, with cosine >= `threshold`.

    Most similar first; pairs recorded KEEP on the skillbook are skipped. Missing vectors are computed first, as for
    search. The candidates come from the search index (`SkillSearchIndex.near`: one matrix-vector product per id
    over its unit rows, or an HNSW query at scale), a margin below `threshold`; their cosines are then computed
    from the skills' own vectors, as `find_similar_pairs` does, so the cost is that of the ids, not of the book.
    """
    targets = [i for i in dict.fromkeys(skill_ids) if _is_active(skillbook, i)]
    if not targets:
        return []
    index = search_index(skillbook, embedder)
    index.sync(skillbook)
    with skillbook.locked():
        held = {t: skillbook.get_skill(t) for t in targets}
    units = {t: l2_normalize(s.embedding[None, :])[0] for t, s in held.items() if s and s.embedding is not None}
    near = index.near(skillbook, units, threshold - _MARGIN)
    found: dict[frozenset[str], SimilarPair] = {}
    with skillbook.locked():
        for t in (t for t in targets if t in near):
            skill, others = skillbook.get_skill(t), [skillbook.get_skill(i) for i in near[t]]
            if skill is None or not skill.visible:
                continue  # removed since the index was asked
            pool = [
                o
                for o in others
                if o is not None and o.visible and o.section == skill.section and o.embedding is not None
            ]
            if not pool:
                continue
            sims = l2_normalize(np.stack([o.embedding for o in pool if o.embedding is not None])) @ units[t]
            for other, sim in zip(pool, sims.tolist(), strict=True):
                key = frozenset((t, other.id))
                if sim < threshold or key in found or skillbook.is_kept_pair(t, other.id):
                    continue
                first, second = sorted(key)
                found[key] = SimilarPair(first, second, float(sim), skill.section)
    return sorted(found.values(), key=lambda p: (-p.similarity, p.first_id, p.second_id))


class DeduplicateOptions(BaseModel):
    """`deduplicate`: the judge's model string, the cosine of a candidate pair, the pairs judged per epoch."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    model: str | None = Field(default=None, min_length=1)
    """The judge (default: the skill manager's model)."""
    threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0.0, le=1.0)
    """Cosine similarity at or above which two skills of a section are a candidate pair."""
    max_pairs: int = Field(default=50, ge=1)
    """Most pairs judged per epoch, most similar first."""


def _build(o: DeduplicateOptions, env: StepEnvironment) -> DeduplicateStep:
    return DeduplicateStep(
        env.model("dedup", o.model), threshold=o.threshold, scope="all", max_pairs=o.max_pairs, embedder=env.embedder
    )


factory = StepFactory(
    step=DeduplicateStep,
    phase="end_of_epoch",
    description="Near-duplicate skill pairs (embedding cosine) judged MERGE / DELETE / UPDATE / KEEP by an LLM.",
    options=DeduplicateOptions,
    build=_build,
    models=lambda o: {"dedup": o.model},
)
