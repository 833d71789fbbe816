"""Where detectable secrets are in a file or a folder: file, line, JSON path, kind and a masked preview.

Every text file is searched line by line as it is written, and its JSON strings decoded too, so a secret written with
JSON escapes (`jane\\u0040example.com`, a key with `\\/` or `\\n` escapes in it) is found whatever the file is
called and whether or not it parses: a JSON file is searched value by value (with each value's JSON path), a JSON
Lines file line by line the same way, and in text that does not parse (a torn last line, a temporary file of a
killed save, a log) each string literal is decoded and searched. A second reading reports only what the first did
not find (kind and masked preview). Text need not be UTF-8: UTF-16 is read by its byte-order mark, other bytes that
are not UTF-8 (latin-1) are replaced, and a gzip file is searched inside. Binary files (NUL bytes: the embeddings
sidecar, zip archives) are skipped and listed as such.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import ace.json_safe as json_safe
from ace.redaction._redactor import NOT_IN_IDS, Finding, Redactor

__all__ = ["ID_KEYS", "ScanResult", "SecretLocation", "scan_path"]

_GZIP = b"\x1f\x8b"
_MAX_GUNZIP = 1 << 30
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)(?:"|$)')
"""A JSON string literal (an unterminated one at the end of a torn line too): its content."""

ID_KEYS: frozenset[str] = frozenset({"trace_uid", "source_system", "trace_id", "span_id", "parent_span_id"})
"""JSON keys whose values are ids (of traces, OpenTelemetry spans): searched for every kind but card numbers (a
span id of 16 hex digits that happen to be all decimal can pass a card number's Luhn check). Keys are searched."""


@dataclass(frozen=True, kw_only=True)
class SecretLocation:
    """One detected value: where it is and what kind; the preview is masked (`sk-p…[51 chars]`)."""

    file: Path
    line: int | None
    """1-based line number (JSON Lines and text files), `None` for a whole-file JSON document."""
    json_path: str
    """`$.messages[3].content` inside the line's or file's JSON, empty for plain text."""
    kind: str
    preview: str

    def describe(self) -> str:
        where = f"{self.file}" + (f":{self.line}" if self.line is not None else "")
        inner = f" {self.json_path}" if self.json_path and self.json_path != "$" else ""
        return f"{where}{inner}  {self.kind}  {self.preview}"


@dataclass(frozen=True, kw_only=True)
class ScanResult:
    """Every location found, the files searched and the files skipped (not text)."""

    locations: list[SecretLocation]
    files: int
    skipped: list[Path]
    refused: list[str] = field(default_factory=list[str])
    """JSON the safe reader refuses (too deep, a too long integer): searched as plain text, named here."""


def scan_path(path: Path, redactor: Redactor | None = None) -> ScanResult:
    """Search a file, or every file under a folder (sorted, hidden files included), for detectable secrets.

    Raises:
        FileNotFoundError: `path` does not exist.
    """
    redactor = redactor or Redactor()
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    files = [path] if path.is_file() else sorted(p for p in _walk(path) if p.is_file())
    locations: list[SecretLocation] = []
    skipped: list[Path] = []
    refused: list[str] = []
    for file in files:
        try:
            data = file.read_bytes()
        except OSError:
            skipped.append(file)
            continue
        suffix = file.suffix
        content: bytes | None = data
        if data[:2] == _GZIP:
            content, suffix = _gunzip(data), Path(file.stem).suffix  # traces.jsonl.gz is searched as JSON Lines
        text = None if content is None else _decode(content)
        if text is None:
            skipped.append(file)
            continue
        locations.extend(_scan_text(file, text, redactor, suffix, refused))
    return ScanResult(locations=locations, files=len(files) - len(skipped), skipped=skipped, refused=refused)


def _gunzip(data: bytes) -> bytes | None:
    """A gzip file's content (at most `_MAX_GUNZIP` bytes); `None` if it is not one after all."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            return f.read(_MAX_GUNZIP)
    except (OSError, EOFError):
        return None


def _decode(data: bytes) -> str | None:
    """The text of a file: UTF-16 by its byte-order mark, else UTF-8 with undecodable bytes replaced (a latin-1
    `é` does not hide the key next to it); `None` for binary data (NUL bytes, e.g. the embeddings sidecar)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data:
        return None
    return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")


def _walk(folder: Path) -> Iterator[Path]:
    for root, _, names in os.walk(folder):
        for name in names:
            yield Path(root) / name


def _parse(text: str, file: Path, line: int | None, refused: list[str]) -> tuple[bool, object]:
    """(parsed, value) of JSON text; text the safe reader refuses for its depth or an integer is noted in `refused`
    (it is then searched as plain text, like malformed JSON)."""
    try:
        return True, json_safe.loads(text, file=str(file), line=line)
    except json_safe.JsonInputError as e:
        if e.kind not in ("syntax", "encoding"):
            refused.append(str(e))
        return False, None


def _scan_text(file: Path, text: str, redactor: Redactor, suffix: str, refused: list[str]) -> Iterator[SecretLocation]:
    """The raw text line by line, and its JSON decoded: value by value where it parses (the document of a `.json`
    file, each line of a `.jsonl` one), else each escaped string literal of the line."""
    lines = text.splitlines()
    if suffix == ".json":
        parsed, data = _parse(text, file, None, refused)
        if parsed:
            decoded = list(_located(file, None, redactor.find_data(data, skip_keys=ID_KEYS)))
            yield from decoded
            for number, line in enumerate(lines, 1):
                yield from _new(_located(file, number, _raw(redactor, line, parsed=True)), decoded)
            return
    for number, line in enumerate(lines, 1):
        if suffix == ".jsonl" and line.strip():
            parsed, data = _parse(line, file, number, refused)
            if parsed:
                decoded = list(_located(file, number, redactor.find_data(data, skip_keys=ID_KEYS)))
                yield from decoded
                yield from _new(_located(file, number, _raw(redactor, line, parsed=True)), decoded)
                continue
        raw = list(_located(file, number, redactor.find(line)))
        yield from raw
        escaped = (m.group(1) for m in _STRING.finditer(line)) if "\\" in line else ()
        literals = [_unescape(content) for content in escaped if "\\" in content]  # the others are searched above
        found = redactor.find("\x00".join(t for t in literals if t))  # NUL: no detector matches across it
        yield from _new(_located(file, number, found), raw)


def _raw(redactor: Redactor, line: str, *, parsed: bool) -> list[Finding]:
    """The findings in a line as it is written; in JSON that parsed, no card numbers (its ids are searched without
    them: a span id of decimal digits can pass the Luhn check, see `ID_KEYS`)."""
    found = redactor.find(line)
    return [f for f in found if f.kind not in NOT_IN_IDS] if parsed else found


def _new(locations: Iterator[SecretLocation], known: list[SecretLocation]) -> Iterator[SecretLocation]:
    """The locations of a second reading of the same text that the first did not find (same kind and preview)."""
    seen = {(k.kind, k.preview) for k in known}
    for location in locations:
        if (location.kind, location.preview) not in seen:
            seen.add((location.kind, location.preview))
            yield location


def _unescape(content: str) -> str:
    """A JSON string literal's content decoded (`\\u0040` is `@`); an escape cut short at its end is dropped."""
    content = re.sub(r"\\(?:u[0-9a-fA-F]{0,3})?$", "", content)
    try:
        value = json.loads(f'"{content}"')
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


def _located(file: Path, line: int | None, findings: list[Finding]) -> Iterator[SecretLocation]:
    for f in findings:
        yield SecretLocation(file=file, line=line, json_path=f.path, kind=f.kind, preview=f.preview)
