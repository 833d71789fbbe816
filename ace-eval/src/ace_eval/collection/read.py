"""Reading a trace collection: every error names the file, the line and the field."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from ace import json_safe
from ace_eval.collection.chat import describe_error, field_path
from ace_eval.collection.model import (
    FORMAT_VERSION,
    MANIFEST_FILE,
    TRACES_FILE,
    CollectionError,
    CollectionManifest,
    Trace,
    TraceCounter,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "describe_trace_error",
    "iter_collection",
    "parse_trace_line",
    "parse_trace_lines",
    "read_collection",
    "read_manifest",
    "split_lines",
]

MAX_JSON_DEPTH = json_safe.MAX_DEPTH
"""Deepest nesting of objects and arrays a trace line may have (the safe reader's limit, `ace.json_safe`)."""


def _key_line(text: str, loc: tuple[int | str, ...]) -> int | None:
    """Best-effort line of the field at `loc` in a JSON text (keys are searched in order)."""
    pos = 0
    for part in loc:
        if isinstance(part, str):
            found = text.find(json.dumps(part), pos)
            if found < 0:
                return None
            pos = found
    return text.count("\n", 0, pos) + 1 if pos else None


def read_manifest(directory: str | os.PathLike[str]) -> CollectionManifest:
    """Read and validate `DIR/manifest.json` (not the traces)."""
    folder = Path(directory)
    path = folder / MANIFEST_FILE
    name = str(path)
    if not path.is_file():
        hint = "" if folder.is_dir() else " (the folder does not exist)"
        raise CollectionError(
            f"not a trace collection: no {MANIFEST_FILE}{hint}; create one with `ace-eval collection import`",
            file=str(folder),
        )
    try:
        data = json_safe.read_bytes(path)
        raw = json_safe.loads(data, file=name)
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None
    text = data.decode("utf-8")
    if not isinstance(raw, dict):
        raise CollectionError(f"the manifest must be a JSON object, got {type(raw).__name__}", file=name, line=1)
    version = raw.get("format_version")
    if version is None:
        raise CollectionError(
            f"missing; this ace-eval reads format_version {FORMAT_VERSION!r} (was the folder written by ace-eval?)",
            file=name,
            field="format_version",
        )
    if version != FORMAT_VERSION:
        raise CollectionError(
            f"unknown format_version {version!r}: this ace-eval reads {FORMAT_VERSION!r}; "
            "update your ace-eval (git pull in its clone, then python3 dev.py test) or re-import the traces",
            file=name,
            line=_key_line(text, ("format_version",)),
            field="format_version",
        )
    try:
        return CollectionManifest.model_validate_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        loc = tuple(first["loc"])
        raise CollectionError(
            describe_error(first), file=name, line=_key_line(text, loc), field=field_path(loc)
        ) from None


def describe_trace_error(e: ValidationError) -> tuple[str, str]:
    """(field, reason) of the first error of a trace, with message paths like `messages[3].tool_calls[0]`."""
    first = e.errors()[0]
    ctx = first.get("ctx") or {}
    if first["type"] in ("message_shape", "json_value"):
        base = field_path(tuple(first["loc"]))
        sub = str(ctx["field"])
        return (sub if first["type"] == "message_shape" else base + sub), str(ctx["reason"])
    loc = tuple(first["loc"])
    return (field_path(loc) if loc else "trace_uid"), describe_error(first)


def parse_trace_line(line: bytes, *, file: str, number: int) -> Trace:
    """Validate one line of `traces.jsonl`; errors name `file`, the line `number` and the field."""
    try:
        raw = json_safe.loads(line, file=file, line=number)
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None
    if not isinstance(raw, dict):
        raise CollectionError(f"a trace must be a JSON object, got {type(raw).__name__}", file=file, line=number)
    try:
        return Trace.model_validate(raw)
    except ValidationError as e:
        field, reason = describe_trace_error(e)
        raise CollectionError(reason, file=file, line=number, field=field) from None


def split_lines(data: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """(numbered non-blank complete lines, the unterminated tail) of a JSONL file's bytes."""
    parts = data.split(b"\n")
    tail = parts.pop()
    return [(i + 1, part) for i, part in enumerate(parts) if part.strip()], tail


def iter_collection(directory: str | os.PathLike[str]) -> Iterator[Trace]:
    """Yield the traces of a collection, validating each; the counts check runs after the last one.

    Use `read_collection` to refuse a bad collection before doing anything with its traces.
    """
    _, traces = _read(directory, lazy=True)
    yield from traces


def read_collection(directory: str | os.PathLike[str]) -> tuple[CollectionManifest, list[Trace]]:
    """Read and validate a whole collection: the manifest, every line, unique uids and the counts."""
    manifest, traces = _read(directory, lazy=False)
    return manifest, list(traces)


def _read(directory: str | os.PathLike[str], *, lazy: bool) -> tuple[CollectionManifest, Iterator[Trace]]:
    manifest = read_manifest(directory)
    path = Path(directory) / TRACES_FILE
    if not path.is_file():
        raise CollectionError(f"missing: the manifest is there but not {TRACES_FILE}", file=str(path))
    try:
        data = json_safe.read_bytes(path)
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None
    traces = _traces(manifest, data, str(path))
    if lazy:
        return manifest, traces
    return manifest, iter(list(traces))


def parse_trace_lines(lines: Iterable[tuple[int, bytes]], *, file: str, source_system: str) -> Iterator[Trace]:
    """Validate numbered lines: each a trace of `source_system`, no `trace_uid` twice."""
    seen: dict[str, int] = {}
    for number, line in lines:
        trace = parse_trace_line(line, file=file, number=number)
        if trace.source_system != source_system:
            raise CollectionError(
                f"{trace.source_system!r} differs from the manifest's {source_system!r}",
                file=file,
                line=number,
                field="source_system",
            )
        if trace.trace_uid in seen:
            raise CollectionError(
                f"{trace.trace_uid!r} duplicates line {seen[trace.trace_uid]}: delete one, or give each run its "
                "own trace_id",
                file=file,
                line=number,
                field="trace_uid",
            )
        seen[trace.trace_uid] = number
        yield trace


def _traces(manifest: CollectionManifest, data: bytes, file: str) -> Iterator[Trace]:
    lines, tail = split_lines(data)
    if tail.strip():
        number = data.count(b"\n") + 1
        try:
            json_safe.loads(tail, file=file, line=number)
        except json_safe.JsonInputError as e:
            if e.kind not in ("syntax", "encoding"):
                raise CollectionError.from_json(e) from None
            raise CollectionError(
                "truncated (no line end and not complete JSON): the run writing it was stopped mid-line; "
                "`ace-eval collection repair DIR` drops the partial line",
                file=file,
                line=number,
            ) from None
        lines.append((number, tail))
    counter = TraceCounter(success_threshold=manifest.success_threshold)
    for trace in parse_trace_lines(lines, file=file, source_system=manifest.source_system):
        counter.add(trace)
        yield trace
    actual = counter.counts()
    for key, stored in manifest.counts.model_dump().items():
        if getattr(actual, key) != stored:
            manifest_path = Path(file).with_name(MANIFEST_FILE)
            repair = "`ace-eval collection repair DIR" + (" --allow-empty`" if actual.traces == 0 else "`")
            raise CollectionError(
                f"the manifest says {stored} but {TRACES_FILE} holds {getattr(actual, key)}: the collection was "
                f"edited, or its writer stopped before updating the manifest; {repair} recounts",
                file=str(manifest_path),
                line=_key_line(manifest_path.read_text(encoding="utf-8"), ("counts", key)),
                field=f"counts.{key}",
            )
