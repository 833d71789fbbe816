"""Training-loop overhead and parallel throughput; prints tables.

    .venv/bin/python benchmarks/pipeline_overhead.py [--traces 200] [--skills 5000] [--latency 0.2]
    .venv/bin/python benchmarks/pipeline_overhead.py --quick    # only ACE's own per-trace overhead, ~2 min

The loop (`Trainer`) runs over synthetic traces on a skillbook pre-filled with `--skills` synthetic skills,
embedded by the fast `SyntheticEmbedder` (64 dimensions; no model). Per trace the scripted models make 4 calls:
1 reflection (`SimpleReflector`) and a skill-manager session (`SkillManager`) of 3: search_skills -> add_skill
or update_skill -> summary, over 20 topics.

1. Zero-latency models: every second but the embedder's is overhead ((wall time - embedding) / traces; the
   embedder is a model, timed and set apart like the LLM calls). Three layers are measured apart:
   - trainer: the loop itself (steps, ordering, per-sample result, checkpoint journal) with in-process roles
     that call no model and change nothing;
   - + skillbook tools: in-process roles that do what the scripted skill manager does (retrieve the relevant
     skills, search, add or widen a skill) directly, without an agent;
   - full loop: the real `SimpleReflector` and `SkillManager` (pydantic-ai agents) on scripted models;
   - pydantic-ai floor: bare pydantic-ai agents making the same 4 calls with the same tool surface (the six
     skill-manager tools' signatures and descriptions) but do-nothing tools, no ACE code.
   Target: < 5 ms per trace at 5,000 skills of ACE's own: per trace, the real roles' time minus the bare agents'
   time on the same trace, run back to back in one loop (the mean over 3 x 195 traces), plus the trainer's own time;
   cross-checked by whole runs (the fastest full loop - embedding - the fastest floor, 7 interleaved runs each).
2. Models that `asyncio.sleep(latency)` per call, at 1 / 4 / 8 workers, with the skill-manager sessions
   `concurrent` (the default: optimistic concurrency, see `ace_eval.e2e.training`) or `ordered` (serialised in
   sample order, bounded below by `traces x 3 calls x latency`), on two trace orders: `interleaved` (a seeded run)
   and `bursts` (10 traces of one topic in a row). Target: 8 workers >= 6x the throughput of 1. The table checks
   the result too: one skill per topic (no near-duplicate from a race) and no lost widening.

The machine may be shared: run twice and read the lower numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import numpy.typing as npt
from _synthetic import SyntheticEmbedder, synthetic_skillbook
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, RunUsage

from ace.core.insight_source import InsightSource
from ace.core.skillbook import Skillbook
from ace.reflector.prompts import REFLECTOR_PROMPT
from ace.reflector.reflection import Reflection
from ace.reflector.simple import Reflector, ReflectorResult, SimpleReflector
from ace.retrieval.index import search_index
from ace.retrieval.top_k import retrieve_top_k
from ace.skill_manager.deps import AppliedOperation, SMDeps
from ace.skill_manager.manager import SkillManager, SMResult
from ace.skill_manager.prompts import SKILL_MANAGER_PROMPT
from ace.skill_manager.tools import SM_TOOLS
from ace_eval.collection import Trace
from ace_eval.e2e.training import Trainer, TrainingConfig

TOPICS = [f"flow_{i:02d}" for i in range(20)]
BURST = 10
"""Consecutive traces share a topic, as the trials of one task do in a benchmark collection."""
SM_CALLS = 3
_TASK = re.compile(r"<task>\n\[(\w+)\]")
_SM_TOPIC = re.compile(r"task: \[(\w+)\]")
ModelFn = Callable[[list[ModelMessage], AgentInfo], Awaitable[ModelResponse]]
R = TypeVar("R")


@dataclass
class Calls:
    """Model calls made, to subtract the time the models spent sleeping."""

    reflector: int = 0
    skill_manager: int = 0


@dataclass
class TimedEmbedder:
    """The synthetic embedder, timed: embedding is model time (like the LLM calls), not the framework's own."""

    inner: SyntheticEmbedder
    seconds: float = 0.0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start


def traces(n: int) -> list[dict[str, Any]]:
    return [
        Trace(
            source_system="bench",
            trace_id=f"t{i:04d}",
            question=f"[{TOPICS[(i // BURST) % len(TOPICS)]}] customer request {i}",
            messages=[
                {"role": "user", "content": f"Please handle request {i}."},
                {"role": "assistant", "content": "Handled."},
            ],
            reward=0.0,
        ).model_dump()
        for i in range(n)
    ]


def _usage(prompt: str) -> RequestUsage:
    """The usage a provider reports with its response; without one, `FunctionModel` estimates it by tokenising
    every message on every call (~0.1 ms per call here), a cost of the test double, not of a model or of ACE."""
    return RequestUsage(input_tokens=len(prompt) // 4, output_tokens=60)


def _prompt(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(str(getattr(p, "content", "")) for p in first.parts)


def reflector_model(latency: float, calls: Calls) -> FunctionModel:
    """One structured-output call that takes `latency` seconds (a recursive reflector's session: several)."""

    async def reflect(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.reflector += 1
        if latency:
            await asyncio.sleep(latency)
        prompt = _prompt(messages)
        found = _TASK.search(prompt)
        topic = found.group(1) if found else "general"
        args = {
            "error_identification": f"The agent mishandled a {topic} request.",
            "root_cause_analysis": f"It skipped the {topic} policy check.",
            "correct_approach": f"Check the {topic} policy first.",
            "key_insight": f"Check the {topic} policy before acting.",
            "skill_tags": [],
        }
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)], usage=_usage(prompt))

    return FunctionModel(reflect)


def skill_manager_model(latency: float, calls: Calls) -> FunctionModel:
    async def manage(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.skill_manager += 1
        if latency:
            await asyncio.sleep(latency)
        prompt = _prompt(messages)
        found = _SM_TOPIC.search(prompt)
        usage = _usage(prompt)
        topic = found.group(1) if found else "general"
        returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        done = {p.tool_name for p in returns if not _conflict(p)}
        if "search_skills" not in done:
            return ModelResponse(
                parts=[ToolCallPart("search_skills", {"query": f"{topic} policy", "keywords": [topic]})], usage=usage
            )
        if not done & {"add_skill", "update_skill"}:
            results: Any = next(p.content for p in returns if p.tool_name == "search_skills")
            if _conflict(returns[-1]):  # another session got there first: redo the edit on what it shows
                results = cast(dict[str, Any], returns[-1].content)["skills"]
            same = [s for s in results if topic in s["keywords"]] if isinstance(results, list) else []
            if same:
                args = {"skill_id": same[0]["id"], "issue": f"{same[0]['issue']} Seen again."}
                return ModelResponse(parts=[ToolCallPart("update_skill", args)], usage=usage)
            args = {
                "section": "context",
                "issue": f"The agent mishandles {topic} requests.",
                "keywords": [topic],
                "insight": f"Check the {topic} policy before acting.",
            }
            return ModelResponse(parts=[ToolCallPart("add_skill", args)], usage=usage)
        return ModelResponse(parts=[TextPart(f"Recorded the {topic} lesson.")], usage=usage)

    return FunctionModel(manage)


def _conflict(part: ToolReturnPart) -> bool:
    """A call not applied because another session changed the skill first (`ConflictResult`)."""
    return isinstance(part.content, dict) and part.content.get("ok") is False


def prefilled(n_skills: int, embedder: SyntheticEmbedder) -> Skillbook:
    """A fresh skillbook of `n_skills` synthetic skills, embedded and indexed (so timing starts warm)."""
    book = synthetic_skillbook(n_skills) if n_skills else Skillbook()
    if n_skills:
        search_index(book, embedder).sync(book)
    return book


def _topic(text: str | None) -> str:
    found = re.match(r"\[(\w+)\]", text or "")
    return found.group(1) if found else "general"


class InProcessReflector:
    """A `Reflector` that calls no model: the reflection the scripted model would return."""

    async def reflect(self, trace: Mapping[str, Any], skillbook: Skillbook) -> ReflectorResult:
        topic = _topic(trace.get("question"))
        reflection = Reflection(
            error_identification=f"The agent mishandled a {topic} request.",
            root_cause_analysis=f"It skipped the {topic} policy check.",
            correct_approach=f"Check the {topic} policy first.",
            key_insight=f"Check the {topic} policy before acting.",
        )
        return ReflectorResult(reflection=reflection, usage=RunUsage(), model_name=None)


class InProcessSkillManager(SkillManager):
    """The scripted session's effect without an agent: relevant-skill retrieval, search, add or widen.

    With `mutate=False` it returns at once (to time the trainer alone).
    """

    def __init__(self, embedder: TimedEmbedder, *, mutate: bool) -> None:
        super().__init__(FunctionModel(_never), embedder=embedder)
        self.mutate = mutate

    async def update_skills_async(
        self, reflections: Sequence[Reflection], skillbook: Skillbook, *, source: InsightSource
    ) -> SMResult:
        applied: tuple[AppliedOperation, ...] = ()
        if self.mutate:
            topic = _topic(source.sample_question)
            query = "\n".join(r.as_prompt_text() for r in reflections)
            retrieve_top_k(skillbook, query, top_k=5, embedder=self.embedder)  # the prompt's relevant skills
            found = retrieve_top_k(skillbook, f"{topic} policy", keywords=[topic], embedder=self.embedder)
            same = [s for s in found if topic in s.keywords]
            if same:
                skill = skillbook.update_skill(
                    same[0].id, f"{same[0].issue} Seen again.", insight_source=source.derive("UPDATE")
                )
                applied = (AppliedOperation(tool="update_skill", operation_type="UPDATE", skill_id=skill.id),)
            else:
                skill = skillbook.add_skill(
                    "context",
                    f"The agent mishandles {topic} requests.",
                    [topic],
                    f"Check the {topic} policy before acting.",
                    insight_source=source.derive("ADD"),
                )
                applied = (AppliedOperation(tool="add_skill", operation_type="ADD", skill_id=skill.id),)
        return SMResult(
            operations=applied, refusals=(), summary="ok", completed=True, stop_reason=None, usage=RunUsage()
        )


async def _never(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise AssertionError("the in-process skill manager calls no model")


@dataclass
class Floor:
    """pydantic-ai alone: a bare structured-output agent (1 call) and a bare tool agent (3 calls) with the same
    instructions, models and tool surface as the real roles (the six skill-manager tools, by signature and
    description) but tools that do nothing and no ACE code around them. What is above this is ACE's own."""

    reflector: Agent[None, Reflection]
    manager: Agent[None, str]

    @classmethod
    def build(cls) -> Floor:
        calls = Calls()
        return cls(
            Agent(reflector_model(0.0, calls), output_type=Reflection, instructions=REFLECTOR_PROMPT),
            Agent(
                skill_manager_model(0.0, calls),
                instructions=SKILL_MANAGER_PROMPT,
                tools=[_do_nothing(t) for t in SM_TOOLS],
            ),
        )

    async def reflect(self, question: str, messages: object) -> None:
        topic = _topic(question)
        await self.reflector.run(f"<task>\n[{topic}] {question}\n</task>\n{messages}")

    async def manage(self, question: str) -> None:
        topic = _topic(question)
        await self.manager.run(f"task: [{topic}] {question}\nreflection: check the {topic} policy first.")


def floor_seconds(n: int) -> float:
    """The `Floor` agents over `n` traces, wall time."""
    floor = Floor.build()

    async def main() -> None:
        for t in traces(n):
            await floor.reflect(t["question"], t["messages"])
            await floor.manage(t["question"])

    start = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - start


@dataclass
class PairedTimes:
    """Per trace: the real role's time minus the bare agents' time for the same trace, run back to back."""

    reflector: dict[str, float]
    skill_manager: dict[str, float]

    def per_trace(self, *, skip: int = 5) -> list[float]:
        """Paired differences in trace order, without the first `skip` (fresh agents build their caches then)."""
        done = [self.reflector[t] + self.skill_manager[t] for t in self.skill_manager if t in self.reflector]
        return done[skip:]


async def back_to_back(
    bare: Awaitable[None], real: Awaitable[R], embedder: TimedEmbedder | None = None
) -> tuple[R, float]:
    """Await the bare agents' call, then the real role's; the real one's result and its time minus theirs (seconds,
    the embedding done meanwhile set apart as model time)."""
    start = time.perf_counter()
    await bare
    middle = time.perf_counter()
    before = embedder.seconds if embedder is not None else 0.0
    result = await real
    end = time.perf_counter()
    embedding = embedder.seconds - before if embedder is not None else 0.0
    return result, (end - middle - embedding) - (middle - start)


class PairedReflector:
    """Runs the floor's bare reflector agent and then the real `SimpleReflector` on each trace, timing both."""

    def __init__(self, real: SimpleReflector, floor: Floor, times: PairedTimes) -> None:
        self.real, self.floor, self.times = real, floor, times

    async def reflect(self, trace: Mapping[str, Any], skillbook: Skillbook) -> ReflectorResult:
        bare = self.floor.reflect(trace["question"], trace["messages"])
        result, self.times.reflector[trace["trace_id"]] = await back_to_back(bare, self.real.reflect(trace, skillbook))
        return result


class PairedSkillManager(SkillManager):
    """Runs the floor's bare tool agent and then the real session on each trace, timing both (embedding apart)."""

    def __init__(self, embedder: TimedEmbedder, floor: Floor, times: PairedTimes) -> None:
        super().__init__(skill_manager_model(0.0, Calls()), embedder=embedder)
        self.timed, self.floor, self.times = embedder, floor, times

    async def update_skills_async(
        self, reflections: Sequence[Reflection], skillbook: Skillbook, *, source: InsightSource
    ) -> SMResult:
        bare = self.floor.manage(source.sample_question or "")
        real = super().update_skills_async(reflections, skillbook, source=source)
        result, self.times.skill_manager[source.trace_id] = await back_to_back(bare, real, self.timed)
        return result


def paired_own_ms(book: Skillbook, n: int, embedder: SyntheticEmbedder) -> list[float]:
    """ACE's own per trace, paired: every trace goes through the bare agents and then the real roles, back to back
    in one `Trainer` run, so the machine's drift (up to 50% between minutes here) hits both sides alike."""
    floor = Floor.build()
    times = PairedTimes({}, {})
    reflector = PairedReflector(SimpleReflector(reflector_model(0.0, Calls())), floor, times)
    manager = PairedSkillManager(TimedEmbedder(embedder), floor, times)
    Trainer(reflector=reflector, skill_manager=manager, config=TrainingConfig(max_workers=1)).run(traces(n), book)
    return [t * 1e3 for t in times.per_trace()]


def _do_nothing(tool: Tool[SMDeps]) -> Tool[Any]:
    """A tool with the name, signature and description of a skill-manager tool, returning at once."""
    result: object = [] if tool.name == "search_skills" else {"ok": True}
    if tool.name == "add_skill":
        result = {"ok": True, "skill_id": "context-00001"}

    @functools.wraps(tool.function)
    async def nothing(*args: Any, **kwargs: Any) -> object:
        return result

    return Tool(nothing)


Layer = Literal["trainer", "tools", "full"]


@dataclass
class Run:
    seconds: float
    calls: Calls
    book: Skillbook
    errors: int
    embed_seconds: float = 0.0
    """Time the embedder took (model time, like the LLM's): the framework's own is `seconds - embed_seconds`."""

    @property
    def own_seconds(self) -> float:
        return self.seconds - self.embed_seconds


def run_trainer(
    book: Skillbook,
    n: int,
    latency: float,
    workers: int,
    embedder: SyntheticEmbedder,
    reflect_latency: float | None = None,
    *,
    layer: Layer = "full",
    **config: Any,
) -> Run:
    calls = Calls()
    timed = TimedEmbedder(embedder)
    reflector: Reflector
    manager: SkillManager
    if layer == "full":
        reflector = SimpleReflector(reflector_model(latency if reflect_latency is None else reflect_latency, calls))
        manager = SkillManager(skill_manager_model(latency, calls), embedder=timed)
    else:
        reflector = InProcessReflector()
        manager = InProcessSkillManager(timed, mutate=layer == "tools")
    trainer = Trainer(reflector=reflector, skill_manager=manager, config=TrainingConfig(max_workers=workers, **config))
    start = time.perf_counter()
    result = trainer.run(traces(n), book)
    return Run(time.perf_counter() - start, calls, result.skillbook, len(result.errors), timed.seconds)


def topic_skills(book: Skillbook) -> int:
    """Skills the scripted skill manager added (one per topic when nothing was duplicated)."""
    return sum(1 for s in book.skills() if s.keywords and s.keywords[0] in TOPICS)


def lost_widenings(book: Skillbook) -> int:
    """Widenings applied but overwritten: each UPDATE appends "Seen again." to the text it read, so a skill whose
    text has fewer of them than its UPDATE occurrences was rewritten from a stale copy."""
    lost = 0
    for skill in book.skills():
        if skill.keywords and skill.keywords[0] in TOPICS:
            updates = sum(1 for o in skill.occurrences if o.operation_type == "UPDATE")
            lost += updates - skill.issue.count("Seen again.")
    return lost


def quick(skills: int, n: int, embedder: SyntheticEmbedder) -> None:
    """ACE's own per-trace overhead alone: the trainer's own time (fastest of 3 runs) + the mean paired difference
    of one run, the figure the README quotes; a few minutes instead of the whole benchmark's ~17."""
    run_trainer(prefilled(0, embedder), 10, 0.0, 1, embedder)  # warm-up: first agent runs build caches
    trainer_ms = min(
        run_trainer(prefilled(skills, embedder), n, 0.0, 1, embedder, layer="trainer").own_seconds / n * 1e3
        for _ in range(3)
    )
    paired = paired_own_ms(prefilled(skills, embedder), n, embedder)
    quartiles = statistics.quantiles(paired, n=4)
    print(
        f"ACE's own overhead per trace ({skills} skills, 1 worker, no checkpoint, quick): "
        f"{statistics.mean(paired) + trainer_ms:.2f} ms = the mean of {len(paired)} paired traces "
        f"({statistics.mean(paired):.2f} ms; quartiles {quartiles[0]:.2f} / {quartiles[1]:.2f} / {quartiles[2]:.2f}) "
        f"+ the trainer itself ({trainer_ms:.3f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--skills", type=int, default=5000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--skip-latency", action="store_true", help="only the zero-latency table")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="only the headline figure: ACE's own overhead per trace (the paired reading + the trainer itself), "
        "one paired run instead of three, no table",
    )
    parser.add_argument("--repeat", type=int, default=2, help="zero-latency runs per row (the fastest is shown)")
    parser.add_argument(
        "--reflection-latency",
        type=float,
        default=None,
        help="seconds one reflection takes (default: --latency, one call); e.g. 1.0 for a 5-call recursive reflector",
    )
    args = parser.parse_args()
    embedder = SyntheticEmbedder(dimension=64)
    n = args.traces
    if args.quick:
        quick(args.skills, n, embedder)
        return

    print(f"1. zero-latency models, {n} traces, 4 model calls per trace: overhead = (wall time - embedding) / traces")
    header = (
        f"{'layer':<17} | {'skills':>6} | {'workers':>7} | {'checkpoint':<23} | {'traces/s':>8} | "
        f"{'embedding/trace ms':>18} | {'overhead/trace ms':>17}"
    )
    print(header)
    print("-" * len(header))
    journal = {"checkpoint": True}
    rows: list[tuple[Layer, int, int, str, dict[str, Any]]] = [
        ("trainer", 0, 1, "none", {}),
        ("trainer", args.skills, 1, "none", {}),
        ("trainer", args.skills, 1, "journal + adaptive", journal),
        ("trainer", args.skills, 4, "journal + adaptive", journal),
        ("tools", args.skills, 1, "none", {}),
        ("tools", args.skills, 1, "journal + adaptive", journal),
        ("full", 0, 1, "none", {}),
        ("full", args.skills, 1, "none", {}),
        ("full", args.skills, 4, "none", {}),
        ("full", args.skills, 8, "none", {}),
        ("full", args.skills, 1, "journal, start+end snap", {"checkpoint": True, "snapshot_every": 10**9}),
        ("full", args.skills, 1, "journal + adaptive", journal),
        ("full", args.skills, 1, "journal + snapshot/1", {"checkpoint": True, "snapshot_every": 1}),
    ]
    run_trainer(prefilled(0, embedder), 10, 0.0, 1, embedder)  # warm-up: first agent runs build caches
    names = {"trainer": "trainer", "tools": "+ skillbook tools", "full": "full loop"}
    full_one = full_journal = trainer_one = float("nan")
    for layer, skills, workers, label, options in rows:
        best: Run | None = None
        for _ in range(args.repeat):
            book = prefilled(skills, embedder)
            with tempfile.TemporaryDirectory() as tmp:
                extra: dict[str, Any] = {}
                if options.get("checkpoint"):
                    extra["checkpoint_dir"] = Path(tmp)
                    extra["snapshot_every"] = options.get("snapshot_every")
                run = run_trainer(book, n, 0.0, workers, embedder, layer=layer, **extra)
            assert run.errors == 0, "the scripted run must not fail"
            if best is None or run.own_seconds < best.own_seconds:
                best = run
        assert best is not None
        own_ms = best.own_seconds / n * 1e3
        print(
            f"{names[layer]:<17} | {skills:>6} | {workers:>7} | {label:<23} | {n / best.seconds:>8.1f} | "
            f"{best.embed_seconds / n * 1e3:>18.2f} | {own_ms:>17.2f}"
        )
        if (layer, skills, workers, label) == ("trainer", args.skills, 1, "none"):
            trainer_one = own_ms
        if (layer, skills, workers) == ("full", args.skills, 1):
            if label == "none":
                full_one = own_ms
            elif label == "journal + adaptive":
                full_journal = own_ms

    # ACE's own, two ways. Whole runs: the fastest full loop - the fastest floor of 7 interleaved runs each (as
    # `timeit` advises). Paired: every trace through the bare agents and then the real roles, back to back (robust
    # to the machine's drift, which moves whole runs by up to 50% between minutes).
    whole: list[tuple[float, float]] = []
    for _ in range(max(args.repeat, 7)):
        full = run_trainer(prefilled(args.skills, embedder), n, 0.0, 1, embedder).own_seconds / n * 1e3
        whole.append((full, floor_seconds(n) / n * 1e3))
    floor = min(f for _, f in whole)
    own_runs = min(full for full, _ in whole) - floor
    paired = [ms for _ in range(3) for ms in paired_own_ms(prefilled(args.skills, embedder), n, embedder)]
    trainer_ms = trainer_one
    own = statistics.mean(paired) + trainer_ms
    quartiles = statistics.quantiles(paired, n=4)
    print(
        f"{'pydantic-ai floor':<17} | {'-':>6} | {1:>7} | {'none':<23} | {1e3 / floor:>8.1f} | {0:>18.2f} | "
        f"{floor:>17.2f}"
    )
    print(
        f"\nACE's own overhead per trace ({args.skills} skills, 1 worker, no checkpoint): {own:.2f} ms = the mean "
        f"of {len(paired)} paired traces ({statistics.mean(paired):.2f} ms; quartiles {quartiles[0]:.2f} / "
        f"{quartiles[1]:.2f} / {quartiles[2]:.2f}) + the trainer ({trainer_ms:.2f} ms).\nWhole runs: fastest full "
        "loop - embedding "
        f"({own_runs + floor:.2f}) - fastest floor ({floor:.2f}) of {len(whole)} interleaved runs = {own_runs:.2f} ms "
        "(drift-prone: the machine's speed moves whole runs by up to 50% between minutes)."
        f"\nThe checkpoint journal adds {full_journal - full_one:.2f} ms per trace here, of which one snapshot at "
        "the start and one at the end are fixed costs of the run, spread over its traces."
    )

    if args.skip_latency:
        return
    lat = args.latency
    reflect_lat = lat if args.reflection_latency is None else args.reflection_latency
    print()
    print(
        f"2. models sleeping {lat * 1e3:.0f} ms per skill-manager call ({SM_CALLS} per trace), "
        f"{reflect_lat * 1e3:.0f} ms per reflection; {n} traces, {args.skills} skills, no checkpoint"
    )
    header = (
        f"{'order':<11} | {'sm_sessions':<11} | {'workers':>7} | {'traces/s':>8} | {'speedup':>7} | "
        f"{'ideal s':>7} | {'SM calls':>8} | {'conflicts':>9} | {'topic skills':>12} | {'lost widenings':>14}"
    )
    print(header)
    print("-" * len(header))
    base: float | None = None
    per_trace = SM_CALLS * lat + reflect_lat
    runs: list[tuple[str, str, int, dict[str, Any]]] = [("any", "-", 1, {})]
    for order, seed in (("interleaved", {"seed": 0}), ("bursts", {})):
        for sessions in ("concurrent", "ordered"):
            runs += [(order, sessions, w, {**seed, "sm_sessions": sessions}) for w in args.workers if w > 1]
    for order, sessions, workers, options in runs:
        book = prefilled(args.skills, embedder)
        run = run_trainer(book, n, lat, workers, embedder, reflect_lat, **options)
        assert run.errors == 0
        if base is None:
            base = n / run.seconds
        speedup = (n / run.seconds) / base
        ideal = n * per_trace / workers
        if sessions == "ordered":
            ideal = max(ideal, n * SM_CALLS * lat)
        conflicts = run.calls.skill_manager - n * SM_CALLS
        print(
            f"{order:<11} | {sessions:<11} | {workers:>7} | {n / run.seconds:>8.2f} | {speedup:>6.2f}x | "
            f"{ideal:>7.1f} | {run.calls.skill_manager:>8} | {conflicts:>9} | {topic_skills(run.book):>12} | "
            f"{lost_widenings(run.book):>14}"
        )
    print()
    topics = len({TOPICS[(i // BURST) % len(TOPICS)] for i in range(n)})
    print(
        f"Right: one skill per topic ({topics}) and no lost widening in every row. 'conflicts' = extra skill-manager "
        "calls\nspent redoing an edit another session beat (ConflictResult). 'bursts' keeps the collection order "
        f"({BURST} traces of a topic\nin a row, all editing one skill: those edits are serial by nature); "
        "'interleaved' is the order a seeded run uses."
    )


if __name__ == "__main__":
    main()
