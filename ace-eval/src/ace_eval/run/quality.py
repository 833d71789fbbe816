"""What a person can act on in a run's learning, beyond the design's checks: `ace-eval verify`'s quality section.

Three signs that the reflector or the skill manager made things up (a small model does):

- **repeated token**: an active skill whose issue or insight repeats one word three times or more in a row
  (`refund of urn urn urn`);
- **failure claimed on a success**: a reflection that names an error on a trace whose reward is 1;
- **unrelated to its trace**: an active skill none of whose keywords appears in any trace it was learned from
  (its question, messages and the grader's comparison).

Each is a warning with a count and the first ids, never a failure: the run did what it was asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ace.core.skill import Skill
from ace.reflector.reflection import Reflection
from ace_eval.text import plural, tone

__all__ = ["QualityWarning", "quality_warnings", "repeats_a_token"]

_REPEAT = re.compile(r"\b(\w+)(?:\W+\1\b){2,}", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s_\-]+")
_SHOWN = 5


class Reflected(Protocol):
    """A sample of the run (`ace_eval.e2e.training_results.SampleResult`): its trace, epoch and reflection."""

    @property
    def trace_uid(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def reflection(self) -> Reflection | None: ...


@dataclass(frozen=True, kw_only=True)
class QualityWarning:
    """One kind of quality problem, how many units show it, and which (the first few)."""

    kind: str
    count: int
    of: int
    unit: str
    ids: tuple[str, ...]

    def line(self) -> str:
        shown = ", ".join(self.ids[:_SHOWN]) + (f" and {len(self.ids) - _SHOWN} more" if len(self.ids) > _SHOWN else "")
        return f"{tone('WARN', 'warn')}  quality: {self.count} of {plural(self.of, self.unit)} {self.kind} ({shown})"


def repeats_a_token(text: str) -> bool:
    """Whether `text` repeats one word three times or more in a row (`urn urn urn`)."""
    return _REPEAT.search(text) is not None


def quality_warnings(
    skills: Iterable[Skill], samples: Iterable[Reflected], traces: Mapping[str, Mapping[str, object]]
) -> list[QualityWarning]:
    """The quality warnings of a run: its active `skills`, its `samples` and its `traces` by `trace_uid`."""
    active = [s for s in skills if s.active]
    done = [s for s in samples if s.reflection is not None]
    warnings: list[QualityWarning] = []
    repeated = [s.id for s in active if repeats_a_token(f"{s.issue}\n{s.insight or ''}")]
    if repeated:
        warnings.append(
            QualityWarning(
                kind="repeat one token", count=len(repeated), of=len(active), unit="skill", ids=tuple(repeated)
            )
        )
    invented = [
        f"{s.trace_uid}#{s.epoch}"
        for s in done
        if s.reflection is not None
        and s.reflection.error_identification.strip()
        and _reward(traces.get(s.trace_uid)) == 1.0
    ]
    if invented:
        warnings.append(
            QualityWarning(
                kind="claim a failure on a trace whose reward is 1",
                count=len(invented),
                of=len(done),
                unit="reflection",
                ids=tuple(invented),
            )
        )
    texts = {uid: _words(json.dumps(trace, ensure_ascii=False, default=str)) for uid, trace in traces.items()}
    unrelated = [
        s.id
        for s in active
        if (known := [texts[o.trace_uid] for o in s.occurrences if o.trace_uid in texts])
        and not any(_words(k).strip() and _words(k) in text for k in s.keywords for text in known)
    ]
    if unrelated:
        warnings.append(
            QualityWarning(
                kind="share no keyword with the traces that taught them",
                count=len(unrelated),
                of=len(active),
                unit="skill",
                ids=tuple(unrelated),
            )
        )
    return warnings


def _reward(trace: Mapping[str, object] | None) -> float | None:
    reward = None if trace is None else trace.get("reward")
    return float(reward) if isinstance(reward, int | float) and not isinstance(reward, bool) else None


def _words(text: str) -> str:
    """Lower-cased words with `_`, `-` and JSON punctuation as spaces, padded: `" update reservation "`."""
    return " " + " ".join(re.sub(r"[^\w ]+", " ", _SEPARATORS.sub(" ", text.lower())).split()) + " "
