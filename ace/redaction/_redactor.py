"""`Redactor`: finds secrets and personal data in text or in a JSON-like structure and replaces them.

A found value becomes a typed placeholder, `[REDACTED:email#1]`: the kind says what was there, the number tells
two values of one kind apart and is the same for the same value (spelled either way: `4111 1111 1111 1111` and
`4111111111111111` are one card) throughout a `RedactionSession` (the step uses one session per trace, so the
reflector can still see that the user gave one e-mail and the agent used another). Sinks (the skillbook, files,
spans) redact with `numbered=False`: `[REDACTED:email]`. Placeholders are never detected again, so redacting
twice changes nothing.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ace.exceptions import UserError
from ace.redaction._detectors import BUILTIN_DETECTORS, DIGIT, Detector, any_in, fold, shape
from ace.redaction._findings import Finding, Match, at, count_kinds, mask, without_overlapped_fallbacks
from ace.redaction._ids import id_placeholder
from ace.redaction._prefilter import MAX_CHARS, Prefilter

__all__ = [
    "NOT_IN_IDS",
    "PLACEHOLDER",
    "Finding",
    "RedactionConfigError",
    "RedactionSession",
    "Redactor",
    "count_kinds",
    "id_placeholder",
    "mask",
    "secret_named",
]

_KIND = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_SEP = "\x00"
_SECRET_WORDS = ("secret", "token", "passw", "key", "credential", "auth")
"""Words of a dict key whose string value is searched as `key: value` (the generic and password detectors read the
key name before the value)."""


def secret_named(key: str) -> bool:
    """Whether `redact_data` searches a string under the dict key `key` as `key: value` (a secret-like name)."""
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_WORDS)


_MIN_INT = 10**7  # ints below this are never a phone or card number
NOT_IN_IDS = frozenset({"card_number"})
"""Kinds not looked for in ids: hex span ids of decimal digits pass the Luhn check one time in ten."""
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+(?:#\d+)?\]")


class RedactionConfigError(UserError, ValueError):
    """An extra pattern or allow-list entry that cannot be used; the message names it and the fix."""


@dataclass
class RedactionSession:
    """Placeholder numbers of one trace: the same value always gets the same number."""

    numbers: dict[tuple[str, str], int] = field(default_factory=dict[tuple[str, str], int])
    counts: Counter[str] = field(default_factory=Counter[str])
    kinds_seen: set[str] = field(default_factory=set[str])
    """Kinds found so far; a detector with `after=` runs once its kind was seen (an AWS secret after its key id)."""

    def placeholder(self, kind: str, key: str) -> str:
        number = self.numbers.get((kind, key))
        if number is None:
            self.counts[kind] += 1
            number = self.numbers[(kind, key)] = self.counts[kind]
        return f"[REDACTED:{kind}#{number}]"


@dataclass(frozen=True)
class _Gate:
    """What is known of one text: whether it has a digit, and its digit shape once needed."""

    digit: bool
    shaped: list[bytes]
    folded: list[bytes]


class Redactor:
    """The built-in detectors, plus `extra_patterns`, minus the allow-listed values. Its settings are immutable;
    thread-safe (its memos, of keys and ids and of provenance texts, are plain dicts: a lost entry is recomputed)."""

    def __init__(
        self,
        *,
        extra_patterns: Mapping[str, str] | None = None,
        allow: Iterable[str] = (),
        allow_patterns: Iterable[str] = (),
        detectors: Sequence[Detector] = BUILTIN_DETECTORS,
    ) -> None:
        """Args:
        extra_patterns: kind name -> regular expression; the first group is the secret when there is one.
        allow: Exact values that are never redacted (a support address, a test card).
        allow_patterns: Regular expressions; a value one of them matches whole is never redacted.
        detectors: The detectors to start from (default: every built-in one).

        Raises:
            RedactionConfigError: naming a kind or pattern that is not usable.
        """
        extra: list[Detector] = []
        for kind, pattern in (extra_patterns or {}).items():
            if not _KIND.match(kind):
                raise RedactionConfigError(
                    f"redaction pattern name {kind!r} must be lowercase letters, digits and _ (e.g. employee_id)"
                )
            compiled = _compile(pattern, f"redaction pattern {kind!r}")
            if compiled.search(""):
                raise RedactionConfigError(f"redaction pattern {kind!r} ({pattern!r}) matches empty text: tighten it")
            extra.append(Detector(kind=kind, pattern=compiled, group=1 if compiled.groups else 0))
        self.detectors: tuple[Detector, ...] = (*detectors, *extra)
        self._first = tuple(d for d in self.detectors if d.after is None)
        self._later = tuple(d for d in self.detectors if d.after is not None)
        self._prefilter = Prefilter.of(self._first)
        self._builtin = all(any(d is b for b in BUILTIN_DETECTORS) for d in self.detectors)
        """Only built-in detectors: a long record's texts may be searched apart (`_clean_texts`)."""
        self.allow: frozenset[str] = frozenset(allow)
        self._allow_patterns = tuple(_compile(p, "redaction allow pattern") for p in allow_patterns)
        self._ids: dict[tuple[str, bool], tuple[str, tuple[Finding, ...]]] = {}
        """`_redact_id` results: keys and ids repeat in every trace ("role", "content", a source system)."""
        self._texts: dict[tuple[str | None, ...], tuple[tuple[str | None, ...] | None]] = {}
        """`redact_texts(..., remember=True)` results: a provenance record's texts recur on every mutation."""

    # ------------------------------------------------------------------------------------------ text
    def find(self, text: str, *, session: RedactionSession | None = None) -> list[Finding]:
        """The secrets in `text`, in order, without changing it."""
        return [
            Finding(kind=m.detector.kind, start=m.start, end=m.end, preview=mask(text[m.start : m.end]))
            for m in self._matches(text, session)
        ]

    def redact(
        self, text: str, *, session: RedactionSession | None = None, numbered: bool = True
    ) -> tuple[str, list[Finding]]:
        """`text` with every secret replaced by its placeholder, and what was replaced.

        `session` keeps the numbering across the texts of one trace; `numbered=False` writes `[REDACTED:kind]`.
        """
        matches = self._matches(text, session)
        if not matches:
            return text, []
        return self._replace(text, matches, _placeholders(session or RedactionSession(), numbered))

    def redact_text(self, text: str) -> str:
        """`text` redacted with un-numbered placeholders: the sinks' second line."""
        return self.redact(text, numbered=False)[0]

    def redact_texts(self, texts: Sequence[str | None], *, remember: bool = False) -> tuple[str | None, ...] | None:
        """The texts of a record (`None` for an absent field, kept as `None`) redacted with un-numbered
        placeholders as one text (as `redact_data` joins a list's strings), or `None` when none holds a secret: the
        skillbook sink's path, one prefilter pass for clean texts.

        `remember=True` keeps the answer for these exact texts (the last `_TEXTS_CACHE_SIZE`, each group up to
        `_TEXTS_CACHE_CHARS` long): a provenance record's texts recur on every mutation of a trace.
        """
        key = texts if isinstance(texts, tuple) else tuple(texts)
        known = self._texts.get(key) if remember else None
        if known is not None:
            return known[0]
        present = [t for t in key if t is not None] if None in key else cast(tuple[str, ...], key)
        if not present:
            return None
        joined = _SEP.join(present)
        out: tuple[str | None, ...] | None = None
        matches = [] if self._clean_texts(present, joined) else self._all_matches(joined, RedactionSession())
        if matches:
            replaced = self._replace_joined(present, matches, _placeholders(RedactionSession(), False))
            clean = iter([replaced[i][0] if i in replaced else text for i, text in enumerate(present)])
            out = tuple(None if text is None else next(clean) for text in key)
        if remember and len(joined) <= _TEXTS_CACHE_CHARS:
            if len(self._texts) >= _TEXTS_CACHE_SIZE:
                self._texts.clear()
            self._texts[key] = (out,)
        return out

    def _clean_texts(self, texts: Sequence[str], joined: str) -> bool:
        """Whether the detectors find nothing in `joined` (`texts` joined by NUL), proved cheaply: over `MAX_CHARS`
        (a request's attribute texts) the detectors search only the texts `Prefilter.unclean` leaves, joined the
        same way. That finds what the whole join would: no built-in pattern, key window or left extension matches a
        NUL, so a match inside one text never depends on the others, and with no match of the first detectors no
        `after=` detector runs. Only for built-in detectors (an extra pattern could look across a NUL)."""
        if len(joined) <= MAX_CHARS or not self._builtin:
            return self._prefilter.clean(joined)
        hits = self._prefilter.unclean(texts)
        return not hits or not self._all_matches(_SEP.join(hits), RedactionSession())

    # ------------------------------------------------------------------------------------- structures
    def redact_data(
        self,
        data: Any,
        *,
        session: RedactionSession | None = None,
        numbered: bool = True,
        skip_keys: frozenset[str] = frozenset(),
    ) -> tuple[Any, list[Finding]]:
        """A copy of a JSON-like structure (dicts, lists, tuples, strings, numbers) with every string redacted.

        Values under `skip_keys` (at any depth) are ids the run needs (of traces, spans): a secret in one (an
        e-mail used as a trace id) is replaced by `id_placeholder`, the same wherever and however often the id is
        redacted, so the id stays one id; they are not searched for card numbers (a span id of 16 decimal digits
        can pass the Luhn check), and ints under them are kept. Keys are searched too and redacted the same way.
        An integer that is a card or phone number becomes its placeholder. Findings carry their JSON path. All
        the other strings are searched in one pass (joined by NUL, which no detector matches across).
        """
        texts: list[str] = []
        paths: list[str] = []
        fixed: dict[tuple[bool, str], str] = {}
        """Keys (False) and id values (True) that hold a secret: their replacement."""
        checked: set[tuple[bool, str]] = set()
        id_findings: list[Finding] = []
        prefixes: dict[int, str] = {}
        """Texts searched with their key in front (a secret-named key's string value): the prefix to take off."""

        def fix(text: str, path: str, is_id: bool) -> str:
            """`text`'s replacement (itself when it holds no secret); its findings are added at `path`."""
            if (is_id, text) not in checked:
                checked.add((is_id, text))
                clean, found = self._redact_id(text, is_id)
                if found:
                    fixed[(is_id, text)] = clean
                    id_findings.extend(at(found, path))
            elif (is_id, text) in fixed:  # found before under another path: count it here too
                id_findings.extend(at(self._redact_id(text, is_id)[1], path))
            return fixed.get((is_id, text), text)

        def collect(value: Any, path: str) -> None:
            if isinstance(value, str):
                texts.append(value)
                paths.append(path)
            elif isinstance(value, Mapping):
                for k, v in value.items():
                    shown = fix(k, path, False) if isinstance(k, str) else k  # a path never shows a secret key
                    if isinstance(k, str) and isinstance(v, str) and k not in skip_keys and secret_named(k):
                        prefixes[len(texts)] = f"{k}: "  # searched as `key: value`, as the text detectors expect
                        texts.append(f"{k}: {v}")
                        paths.append(f"{path}.{shown}")
                    elif k not in skip_keys:
                        collect(v, f"{path}.{shown}")
                    elif isinstance(v, str):
                        fix(v, f"{path}.{shown}", True)
            elif isinstance(value, list | tuple):
                for i, v in enumerate(value):
                    collect(v, f"{path}[{i}]")
            elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _MIN_INT:
                texts.append(str(value))
                paths.append(path)

        collect(data, "$")
        joined = _SEP.join(texts)
        matches = self._matches(joined, session)
        if not matches and not fixed:
            return data, []
        session = session if session is not None else RedactionSession()
        replaced: dict[int, str] = {}
        findings: list[Finding] = id_findings
        for index, (text, new) in self._replace_joined(texts, matches, _placeholders(session, numbered)).items():
            replaced[index] = text
            findings.extend(at(new, paths[index]))
        position = -1

        def rebuild(value: Any) -> Any:
            nonlocal position
            if isinstance(value, str):
                position += 1
                new = replaced.get(position)
                if new is None:
                    return value
                prefix = prefixes.get(position, "")
                return new[len(prefix) :] if new.startswith(prefix) else new
            if isinstance(value, Mapping):
                return {
                    fixed.get((False, k), k) if isinstance(k, str) else k: (
                        (fixed.get((True, v), v) if isinstance(v, str) else v) if k in skip_keys else rebuild(v)
                    )
                    for k, v in value.items()
                }
            if isinstance(value, list | tuple):
                return [rebuild(v) for v in value]
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _MIN_INT:
                position += 1
                return replaced.get(position, value)
            return value

        return rebuild(data), findings

    def find_data(self, data: Any, *, skip_keys: frozenset[str] = frozenset()) -> list[Finding]:
        """The secrets in a structure, with their JSON paths, without changing it (values under `skip_keys` kept)."""
        return self.redact_data(data, skip_keys=skip_keys)[1]

    # -------------------------------------------------------------------------------------- internal
    def _redact_id(self, text: str, is_id: bool) -> tuple[str, list[Finding]]:
        """A key or an id with each secret replaced by its `id_placeholder` (no card check for an id)."""
        known = self._ids.get((text, is_id))
        if known is None:
            matches = self._matches(text, None)
            if is_id:
                matches = [m for m in matches if m.detector.kind not in NOT_IN_IDS]
            redacted, findings = self._replace(text, matches, id_placeholder) if matches else (text, [])
            if len(self._ids) >= _ID_CACHE_SIZE:
                self._ids.clear()
            known = self._ids[(text, is_id)] = (redacted, tuple(findings))
        return known[0], list(known[1])

    def _replace_joined(
        self, texts: Sequence[str], matches: list[Match], placeholder_of: Callable[[str, str], str]
    ) -> dict[int, tuple[str, list[Finding]]]:
        """For each of `texts` that `matches` (found in the texts joined by NUL) fall in: it with them replaced, and
        its findings (offsets in it)."""
        starts = list(itertools.accumulate((len(text) + 1 for text in texts[:-1]), initial=0))
        by_text: dict[int, list[Match]] = {}
        for m in matches:
            by_text.setdefault(bisect.bisect_right(starts, m.start) - 1, []).append(m)
        return {
            index: self._replace(
                texts[index],
                [Match(m.start - starts[index], m.end - starts[index], m.order, m.detector) for m in found],
                placeholder_of,
            )
            for index, found in by_text.items()
        }

    def _replace(
        self, text: str, matches: list[Match], placeholder_of: Callable[[str, str], str]
    ) -> tuple[str, list[Finding]]:
        """`text` with each match replaced by `placeholder_of(kind, normalised value)`, and the findings."""
        parts: list[str] = []
        findings: list[Finding] = []
        position = 0
        for m in matches:
            value = text[m.start : m.end]
            normalize = m.detector.normalize
            placeholder = placeholder_of(m.detector.kind, normalize(value) if normalize is not None else value)
            parts.append(text[position : m.start])
            parts.append(placeholder)
            position = m.end
            findings.append(
                Finding(kind=m.detector.kind, start=m.start, end=m.end, preview=mask(value), placeholder=placeholder)
            )
        parts.append(text[position:])
        return "".join(parts), findings

    def _matches(self, text: str, session: RedactionSession | None) -> list[Match]:
        """What the detectors find in `text`, without overlaps; `[]` at once when the prefilter proves it clean and
        no detector waits on a kind `session` has seen."""
        if self._prefilter.clean(text) and not (
            session is not None and session.kinds_seen and any(d.after in session.kinds_seen for d in self._later)
        ):
            return []
        return self._all_matches(text, session if session is not None else RedactionSession())

    def _all_matches(self, text: str, session: RedactionSession) -> list[Match]:
        """`_matches` without the prefilter: every detector's gate, then its pattern."""
        candidates: list[Match] = []
        gate = _Gate(DIGIT.search(text) is not None, [], [])
        self._search(text, self._first, candidates, 0, gate)
        if self._later:
            session.kinds_seen.update(m.detector.kind for m in candidates)
            later = [d for d in self._later if d.after in session.kinds_seen]
            self._search(text, later, candidates, len(self._first), gate)
        if not candidates:
            return []
        if any(m.detector.fallback for m in candidates):
            candidates = without_overlapped_fallbacks(candidates)
        candidates.sort(key=lambda m: (m.start, m.start - m.end, m.order))
        accepted: list[Match] = []
        end = -1
        for m in candidates:
            if m.start >= end:
                accepted.append(m)
                end = m.end
        return accepted

    def _search(self, text: str, detectors: Sequence[Detector], out: list[Match], offset: int, gate: _Gate) -> None:
        for order, detector in enumerate(detectors, offset):
            if detector.triggers and not (detector.on_digit and gate.digit) and not any_in(detector.literals, text):
                continue
            if detector.folded:
                if not gate.folded:
                    gate.folded.append(fold(text))
                if not any_in(detector.folded, gate.folded[0]):
                    continue
            if detector.shape_gate is not None:
                if not gate.shaped:
                    gate.shaped.append(shape(text))
                if detector.shape_gate.search(gate.shaped[0]) is None:
                    continue
            group, check, left, narrow = detector.group, detector.check, detector.left, detector.narrow
            preceded = detector.preceded
            search, position = detector.pattern.search, 0
            while (m := search(text, position)) is not None:
                position = m.end() if m.end() > m.start() else m.start() + 1
                start, end = m.span(group)
                if start < 0 or start == end:
                    continue
                if preceded is not None and preceded.search(text, max(0, m.start() - 64), m.start()) is None:
                    continue
                if left is not None:
                    window = text[max(0, start - 64) : start]
                    extension = left.search(window)
                    if extension is None:
                        continue
                    start -= len(window) - extension.start()
                if narrow is not None:
                    span = narrow(text[start:end])
                    if span is None:
                        continue
                    start, end = start + span[0], start + span[1]
                value = text[start:end]
                if _SEP in value or (check is not None and not check(value)) or self._allowed(value):
                    if detector.retry:
                        position = m.start() + 1
                    continue
                out.append(Match(start, end, order, detector))

    def _allowed(self, value: str) -> bool:
        if value in self.allow or PLACEHOLDER.fullmatch(value):
            return True
        return any(p.fullmatch(value) for p in self._allow_patterns)


def _placeholders(session: RedactionSession, numbered: bool) -> Callable[[str, str], str]:
    """`[REDACTED:kind#n]` numbered in `session`, or `[REDACTED:kind]`."""
    return session.placeholder if numbered else lambda kind, _value: f"[REDACTED:{kind}]"


_ID_CACHE_SIZE = 4096
"""Distinct keys and ids a `Redactor` remembers the redaction of (it forgets them all past that)."""
_TEXTS_CACHE_SIZE = 256
"""Distinct groups of texts `redact_texts(remember=True)` remembers (it forgets them all past that)."""
_TEXTS_CACHE_CHARS = 8192
"""Longer groups of texts are not remembered (the cache stays under a few MB)."""


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise RedactionConfigError(f"{what} {pattern!r} is not a valid regular expression ({e}): fix it") from None
