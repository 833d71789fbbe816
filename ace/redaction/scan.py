"""Where detectable secrets are in a file or a folder: file, line, JSON path, kind and a masked preview.

JSON files are searched value by value (a secret inside an escaped string is still found), JSON Lines files line by
line, other text files line by line. Text need not be UTF-8: UTF-16 is read by its byte-order mark, other bytes
that are not UTF-8 (latin-1) are replaced, and a gzip file is searched inside. Binary files (NUL bytes: the
embeddings sidecar, zip archives) are skipped and listed as such.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ace.core import json_safe
from ace.redaction._redactor import Finding, Redactor

__all__ = ["ID_KEYS", "ScanResult", "SecretLocation", "scan_path"]

_GZIP = b"\x1f\x8b"
_MAX_GUNZIP = 1 << 30

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
    if suffix == ".json":
        parsed, data = _parse(text, file, None, refused)
        if parsed:
            yield from _located(file, None, redactor.find_data(data, skip_keys=ID_KEYS))
            return
    for number, line in enumerate(text.splitlines(), 1):
        findings: list[Finding] | None = None
        if suffix == ".jsonl" and line.strip():
            parsed, data = _parse(line, file, number, refused)
            findings = redactor.find_data(data, skip_keys=ID_KEYS) if parsed else None
        if findings is None:
            findings = redactor.find(line)
        yield from _located(file, number, findings)


def _located(file: Path, line: int | None, findings: list[Finding]) -> Iterator[SecretLocation]:
    for f in findings:
        yield SecretLocation(file=file, line=line, json_path=f.path, kind=f.kind, preview=f.preview)
