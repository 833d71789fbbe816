"""`SharedValues`: the equal values of one skillbook file, each stored once however often the file repeats it.

The JSON parser makes a new string for every value it reads, so a file of 100,000 skills holds each trace id,
keyword, question and timestamp thousands of times, and each audit-log entry a second copy of its skill's texts.
A load passes one `SharedValues` to every reader of its records (`Skill.from_dict`, `InsightSource.from_dict`,
`UpdateOperation.from_dict`), which keep the first copy of each value; the load drops it when it is done. (An
audit-log entry shares its skill's texts by another way: `UpdateOperation.from_dict(..., skills=...)`.)
"""

from __future__ import annotations

from collections import deque

__all__ = ["SharedValues"]


class SharedValues:
    """The strings and keyword labels one load has read, for the next equal value to reuse."""

    __slots__ = ("_labels", "_recent_times", "_strings")

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._labels: dict[str, str] = {}
        self._recent_times: deque[str] = deque(maxlen=4)

    def time(self, value: str) -> str:
        """One string for equal timestamps read close together: a skill's `created_at`, `updated_at` and the
        entries a mutation without a source appends (made at the same instant), without keeping every time seen."""
        for seen in self._recent_times:
            if seen == value:
                return seen
        self._recent_times.append(value)
        return value

    def text(self, value: str) -> str:
        """The first string equal to `value` this load has seen (`value` itself the first time)."""
        return self._strings.setdefault(value, value)

    def labels(self, keywords: object) -> list[str] | None:
        """`keywords` as a new list of the stored labels when it is a list of labels all checked before (normalised,
        `learn_labels`) without a repeat; `None` when it has to be checked."""
        if type(keywords) is not list or not keywords:
            return None
        known = self._labels
        try:
            out = [known[label] for label in keywords]
        except (KeyError, TypeError):  # a new label, or something unhashable that the check refuses
            return None
        return out if len(out) == 1 or len(set(out)) == len(out) else None

    def learn_labels(self, labels: list[str]) -> list[str]:
        """`labels` (checked: normalised, no repeats) with each label stored once; later `labels` calls know them."""
        known = self._labels
        return [known.setdefault(label, label) for label in labels]
