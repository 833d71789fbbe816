"""Is a learned skill grounded in what actually went wrong? A lexical check against the grader's comparison.

A skill is grounded when its issue, insight or keywords name something that differed in a trace it was
learned from (its `occurrences[].trace_uid`): the tool of a missing, extra or different action, or the name
or a value of an argument that differed (`cabin`, `"business"`). Matching ignores case and treats `_`, `-`
and spaces alike (`payment id` names `payment_id`). Numbers and values under 3 characters are not terms: a
`"15.0"` skill is not grounded by an amount that happens to differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ace.core.skill import Skill
from ace_eval.collection.grading import GraderReport

__all__ = [
    "GroundingSummary",
    "diff_terms",
    "grounded_terms",
    "named_terms",
    "reflection_grounding",
    "summarise_grounding",
]

_MIN_TERM_CHARS = 3
_INDEX = re.compile(r"\[\d+\]")
_SEPARATORS = re.compile(r"[\s_\-]+")
_LETTER = re.compile(r"[^\W\d_]")


_PUNCTUATION = re.compile(r"[^\w ]+")


def _normalise(text: str) -> str:
    return _SEPARATORS.sub(" ", text.lower()).strip()


def _padded_words(text: str) -> str:
    """Lower-cased words separated by single spaces, padded, so `" term "` finds whole words only."""
    return " " + " ".join(_PUNCTUATION.sub(" ", _normalise(text)).split()) + " "


def _term(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    text = _normalise(value)
    return text if len(text) >= _MIN_TERM_CHARS and _LETTER.search(text) else None


def diff_terms(report: GraderReport) -> frozenset[str]:
    """What differed, as normalised terms: tool names, differing argument names and their string values."""
    terms: set[str] = set()
    for action in report.actions:
        terms.add(_normalise(action.tool))
        for argument in action.arguments:
            name = _INDEX.sub("", argument.path).rsplit(".", 1)[-1]
            for candidate in (name, argument.given, argument.gold):
                term = _term(candidate)
                if term is not None:
                    terms.add(term)
    return frozenset(terms)


def named_terms(text: str, terms: Iterable[str]) -> list[str]:
    """The terms `text` names (whole words), in sorted order."""
    words = _padded_words(text)
    return sorted(t for t in set(terms) if _padded_words(t) in words)


def grounded_terms(skill: Skill, terms: Iterable[str]) -> list[str]:
    """The terms the skill's issue, insight or keywords name (whole words), in sorted order."""
    return named_terms(" ".join([skill.issue, skill.insight or "", *skill.keywords]), terms)


def reflection_grounding(
    reflections: Iterable[tuple[str, Mapping[str, object] | None]], graders: Mapping[str, GraderReport | None]
) -> tuple[int, int]:
    """`(reflections on a trace with a difference, those naming one of its differing terms)`, for
    `(trace_uid, reflection fields)` pairs: where the chain from the grader to the skillbook breaks."""
    with_diff = grounded = 0
    for uid, reflection in reflections:
        report = graders.get(uid)
        terms = diff_terms(report) if report is not None else frozenset()
        if not terms:
            continue
        with_diff += 1
        grounded += bool(named_terms(" ".join(str(v) for v in (reflection or {}).values()), terms))
    return with_diff, grounded


@dataclass(frozen=True, kw_only=True)
class GroundingSummary:
    """How many learned skills name what differed in the traces they were learned from."""

    skills: int
    """Active skills."""
    with_diff: int
    """Skills learned from at least one trace whose comparison with the gold shows a difference."""
    grounded: int
    """Of those, the skills that name a differing tool or argument of such a trace."""
    examples: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """`(skill id, terms it names)` for the grounded skills."""

    @property
    def share(self) -> float | None:
        """`grounded / with_diff` (`None` when no skill comes from a trace with a difference)."""
        return self.grounded / self.with_diff if self.with_diff else None


def summarise_grounding(skills: Iterable[Skill], graders: Mapping[str, GraderReport | None]) -> GroundingSummary:
    """Grounding of active `skills` against the comparisons of their source traces (`trace_uid -> grader`)."""
    terms_of = {uid: diff_terms(report) for uid, report in graders.items() if report is not None}
    total = with_diff = grounded = 0
    examples: list[tuple[str, tuple[str, ...]]] = []
    for skill in skills:
        if not skill.active:
            continue
        total += 1
        terms = set().union(*(terms_of.get(o.trace_uid, frozenset()) for o in skill.occurrences))
        if not terms:
            continue
        with_diff += 1
        named = grounded_terms(skill, terms)
        if named:
            grounded += 1
            examples.append((skill.id, tuple(named)))
    return GroundingSummary(skills=total, with_diff=with_diff, grounded=grounded, examples=tuple(examples))
