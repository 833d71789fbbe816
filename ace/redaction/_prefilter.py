"""`Prefilter`: a few quick passes over a text that prove no detector can find anything in it, so the per-detector
loop is skipped for clean prose (most of what the skillbook and the other sinks store).

It is built from the detectors' own gates, so it agrees with them by construction: a detector searches its pattern
only when one of its `triggers` is in the text (any digit, for the digit triggers) and its shape gate matches. The
prefilter says "clean" only when no trigger literal of any detector is in the text (nor a key word of those with
case-insensitive ones, unless their shape gate fails), the shape gates of the
detectors a digit opens all fail (or the text has no digit), and no detector without triggers could search.

Speed comes from the regular expression engine's prefix scan: the trigger literals are one expression in which
each literal starts at its rarest character (`w(?<=aw)s` for `aws`), so the engine stops only at rare characters;
the shape gates are grouped by their first character (`000...`, `AA`), so each group is a fast literal search.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import AnyStr, TypeVar

from ace.redaction._detectors import DIGIT, Detector, any_in, fold, shape

__all__ = ["MAX_CHARS", "Prefilter", "literal_pattern", "split_literals"]

_T = TypeVar("_T")
_BY_FREQUENCY = " etaoinsrhl0123456789dcumfpgwybvk,.xjqzTAISECBWHMPORDNLFGUYVKJXQZ-'()\":;/"
"""Characters from the most to the least frequent in the texts sinks store (English letter frequencies, digits
among the common letters, then capitals and punctuation); a literal starts at its character latest in this list
(a character not in it is rarer still)."""
MAX_CHARS = 4096
"""The longest text the prefilter looks at."""
_ZERO = ord("0")
"""An ASCII digit in the shape (an int: `b"0" in shaped` first tries the bytes as a number, and that costs more)."""
_RARE = _BY_FREQUENCY.index("u")
"""A literal whose every character comes before this one (`earer`, `ecret`) is looked up with `in`: as an anchor
its character would stop the expression at one character in ten."""


def _rarity(char: str) -> int:
    position = _BY_FREQUENCY.find(char)
    return len(_BY_FREQUENCY) if position < 0 else position


def split_literals(literals: Iterable[str]) -> tuple[list[str], list[str]]:
    """`literals` without those that contain another, split in two: those with a rare character (for
    `literal_pattern`), and those of common characters only (looked up with `in`)."""
    unique = sorted(set(literals))
    kept = [s for s in unique if not any(other != s and other in s for other in unique)]
    rare = [s for s in kept if max(map(_rarity, s)) >= _RARE]
    return rare, [s for s in kept if s not in rare]


def literal_pattern(literals: Iterable[str]) -> str:
    """A regular expression that matches where any of `literals` occurs: `anchor(?<=before)after` per literal,
    grouped by anchor (its rarest character), so a search only tries a match at the anchors. Literals with the
    same anchor, the same text after it and as many characters before share one look-behind (`(?<=ghp_|gho_)`)."""
    groups: dict[str, dict[tuple[str, int], list[str]]] = {}
    for literal in sorted(set(literals)):
        i = max(range(len(literal)), key=lambda k: _rarity(literal[k]))
        after = literal[i + 1 :]
        groups.setdefault(literal[i], {}).setdefault((after, i), []).append(re.escape(literal[: i + 1]))
    alternatives = []
    for anchor, rests in groups.items():
        tails = [
            (f"(?<={'|'.join(befores)})" if width else "") + re.escape(after)
            for (after, width), befores in rests.items()
        ]
        alternatives.append(re.escape(anchor) + ("" if "" in tails else f"(?:{'|'.join(tails)})"))
    return "|".join(alternatives)


@dataclass(frozen=True)
class Prefilter:
    """The gates of a set of detectors, merged: `clean(text)` is `True` only when none of them would search."""

    literals: re.Pattern[str] | None
    """The trigger literals (not digits) of the detectors without a shape gate, those with a rare character."""
    common_literals: tuple[str, ...]
    """The others (`in` costs less than stopping the expression at each of their characters)."""
    shaped_literals: tuple[tuple[tuple[str, ...], re.Pattern[bytes]], ...]
    """The trigger literals and the shape gate of each detector that has both (searched only when a literal is in
    the text, as the detector does)."""
    digit_shapes: tuple[re.Pattern[bytes], ...]
    """Shape gates of the detectors a digit opens, grouped by first character (searched when the text has a digit)."""
    digit_patterns: tuple[re.Pattern[str], ...]
    """Patterns of the detectors a digit opens that have no shape gate."""
    folded: tuple[tuple[tuple[bytes, ...], re.Pattern[bytes] | None], ...]
    """The case-insensitive key words (`Detector.folded`) and the shape gate of each detector that has them (the
    gate searched only when a key word is in the text's `fold`)."""
    shapes: tuple[re.Pattern[bytes], ...]
    """Shape gates of the detectors without triggers."""
    patterns: tuple[re.Pattern[str], ...]
    """Patterns of the detectors without triggers or shape gate (searched whatever the text)."""

    @classmethod
    def of(cls, detectors: Sequence[Detector]) -> Prefilter:
        """The prefilter of `detectors` (those with `after=` are left to the caller: they depend on a session)."""
        rare, common = split_literals(literal for d in detectors if d.shape_gate is None for literal in d.literals)
        digit = [d for d in detectors if d.on_digit]
        ungated = [d for d in detectors if not d.triggers and not d.folded]
        return cls(
            literals=re.compile(literal_pattern(rare)) if rare else None,
            common_literals=tuple(common),
            shaped_literals=tuple(
                (d.literals, d.shape_gate) for d in detectors if d.literals and d.shape_gate is not None
            ),
            folded=tuple((d.folded, d.shape_gate) for d in detectors if d.folded and not d.triggers),
            digit_shapes=_grouped_shapes(d for d in digit if d.shape_gate is not None),
            digit_patterns=_unique(d.pattern for d in digit if d.shape_gate is None),
            shapes=_grouped_shapes(d for d in ungated if d.shape_gate is not None),
            patterns=_unique(d.pattern for d in ungated if d.shape_gate is None),
        )

    def clean(self, text: str) -> bool:
        """Whether no detector would search `text` (or none of its patterns matches): then it holds nothing to find.

        `False` for a text over `MAX_CHARS` without looking: a long text (a whole trace) almost always holds a
        trigger somewhere, and the scan that finds it would only add to the detectors' own lookups."""
        if len(text) > MAX_CHARS:
            return False
        if self.literals is not None and self.literals.search(text) is not None:
            return False
        if any_in(self.common_literals, text):
            return False
        for pattern in self.patterns:
            if pattern.search(text) is not None:
                return False
        shaped = b""
        for literals, gate in self.shaped_literals:
            if any_in(literals, text):
                shaped = shaped or shape(text)
                if gate.search(shaped) is not None:
                    return False
        folded = b""
        for words, word_gate in self.folded:
            folded = folded or fold(text)
            if any_in(words, folded):
                if word_gate is None:
                    return False
                shaped = shaped or shape(text)
                if word_gate.search(shaped) is not None:
                    return False
        if not (self.shapes or self.digit_shapes or self.digit_patterns):
            return True
        shaped = shaped or shape(text)
        for gate in self.shapes:
            if gate.search(shaped) is not None:
                return False
        if _ZERO in shaped or not text.isascii():  # a digit of another script hides in a non-ASCII text's bytes
            if self.digit_patterns and (_ZERO in shaped or DIGIT.search(text) is not None):
                for pattern in self.digit_patterns:
                    if pattern.search(text) is not None:
                        return False
            for gate in self.digit_shapes:  # without the `\d` scan of the text (slow beyond ASCII): a gate that
                if gate.search(shaped) is not None:  # opens on a digitless text only sends it to the detectors
                    return False
        return True

    def unclean(self, texts: Sequence[str]) -> list[str]:
        """The texts `clean` does not call clean, in order, for many texts at a time: one pass of each gate over them
        all (joined by NUL, which no gate matches) sets aside the texts in which no gate of any kind opens, with no
        detector to search them; `clean` looks at each of the others on its own. Texts of any length are set aside
        (`clean` would refuse a long one without looking)."""
        joined = "\x00".join(texts)
        positions: set[int] = set()
        for pattern in (self.literals, *self.patterns, *self.digit_patterns):
            if pattern is not None:
                positions.update(m.start() for m in pattern.finditer(joined))
        for literal in (*self.common_literals, *(s for literals, _ in self.shaped_literals for s in literals)):
            positions.update(_finds(joined, literal))
        starts = _starts(len(text) for text in texts)
        opened = {bisect.bisect_right(starts, p) - 1 for p in positions}
        at_bytes: set[int] = set()  # the shape and the fold are UTF-8 bytes: offsets of the text's only in ASCII
        if self.folded:
            folded = fold(joined)
            at_bytes.update(i for words, _ in self.folded for word in words for i in _finds(folded, word))
        if self.shapes or self.digit_shapes:
            shaped = shape(joined)
            at_bytes.update(m.start() for gate in (*self.shapes, *self.digit_shapes) for m in gate.finditer(shaped))
        if at_bytes:
            ascii_ = joined.isascii()
            byte_starts = starts if ascii_ else _starts(len(t) if t.isascii() else len(_utf8(t)) for t in texts)
            opened.update(bisect.bisect_right(byte_starts, p) - 1 for p in at_bytes)
        return [texts[i] for i in sorted(opened) if not self.clean(texts[i])]


def _starts(lengths: Iterable[int]) -> list[int]:
    """Where each of texts of these lengths starts in their join by one separator (the last length is not needed)."""
    return list(itertools.accumulate((n + 1 for n in lengths), initial=0))[:-1]


def _utf8(text: str) -> bytes:
    """The UTF-8 bytes `shape` and `fold` make of `text` (same length)."""
    return text.encode("utf-8", "surrogatepass")


def _finds(text: AnyStr, literal: AnyStr) -> Iterator[int]:
    """Where `literal` occurs in `text`."""
    position = text.find(literal)
    while position >= 0:
        yield position
        position = text.find(literal, position + 1)


def _grouped_shapes(detectors: Iterable[Detector]) -> tuple[re.Pattern[bytes], ...]:
    """The shapes and shape patterns of `detectors` as a few expressions, one per first character: the engine
    searches `000(?:...)` as fast as a literal. A shape pattern that does not start with a letter or digit (a flag,
    a group) or that has groups (back-references) keeps its own expression."""
    groups: dict[str, list[bytes]] = {}
    alone: list[re.Pattern[bytes]] = []
    for d in detectors:
        for s in d.shapes:
            groups.setdefault(s[0] if s[0].isalnum() else "", []).append(re.escape(s.encode()))
        if d.shape_pattern:
            compiled = re.compile(d.shape_pattern.encode())
            if d.shape_pattern[0].isalnum() and not compiled.groups:
                groups.setdefault(d.shape_pattern[0], []).append(d.shape_pattern.encode())
            else:
                alone.append(compiled)
    return _unique([*(re.compile(b"|".join(_unique(g))) for g in groups.values()), *alone])


def _unique(items: Iterable[_T]) -> tuple[_T, ...]:
    """`items` without repeats, in order."""
    return tuple(dict.fromkeys(items))
