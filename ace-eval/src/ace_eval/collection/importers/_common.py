"""What every importer shares: the imported result, JSON loading and source-located errors."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from ace import json_safe
from ace_eval.collection.chat import describe_error, field_path
from ace_eval.collection.model import CollectionError, Trace
from ace_eval.collection.read import describe_trace_error

__all__ = [
    "ImportedCollection",
    "build_trace",
    "check_writable",
    "json_object",
    "json_objects",
    "load_json",
    "parse_source",
    "read_source",
    "validate_source",
]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, kw_only=True)
class ImportedCollection:
    """Traces converted from another system, with what the manifest should say about them."""

    traces: list[Trace]
    source_system: str
    benchmark: str | None = None
    models: dict[str, str] = field(default_factory=dict[str, str])
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    """Provenance for the manifest: the importer and the source file."""


def json_object(value: JsonValue) -> dict[str, JsonValue]:
    """`value` when it is a JSON object, else `{}` (a source field that is absent, null or of another shape)."""
    return value if isinstance(value, dict) else {}


def json_objects(value: JsonValue) -> list[dict[str, JsonValue]]:
    """The JSON objects of a list (`[]` when `value` is not a list); other items are skipped."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def read_source(path: str | os.PathLike[str], *, head: int | None = None) -> bytes:
    """A source file's bytes (or its first `head` bytes) through the safe reader (`ace.json_safe.read_bytes`):
    within its size limit, and only a regular file (a FIFO would hang the import, `/dev/zero` fill the memory)."""
    try:
        return json_safe.read_bytes(path, head=head)
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None


def parse_source(text: str | bytes, *, file: str, line: int | None = None) -> object:
    """One JSON document (a file, or its line `line`) parsed by the safe reader: malformed JSON, nesting deeper than
    it allows and too long integers are a `CollectionError` naming the file, the line and the column."""
    try:
        return json_safe.loads(text, file=file, line=line)
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None


def check_writable(traces: Sequence[Trace], *, file: str) -> None:
    """Refuse, before anything is written, a trace the collection's own reader would refuse (nested deeper than the
    safe reader allows once in its line, an integer too long): so a run never writes what it cannot read back."""
    for i, trace in enumerate(traces):
        line = json.dumps(trace.model_dump(mode="json"), ensure_ascii=False)
        try:
            json_safe.loads(line, line=i + 1)
        except json_safe.JsonInputError as e:
            raise CollectionError(
                f"trace {trace.trace_id!r} (the {_ordinal(i + 1)} imported): {e.reason}",
                file=file,
                field=e.field,
            ) from None


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def load_json(path: str | os.PathLike[str]) -> object:
    """Parse a JSON file with the safe reader (`ace.json_safe`); errors name the file, the line and the field."""
    try:
        return json_safe.read_json(path)
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None


def validate_source(model: type[M], raw: object, *, file: str, where: str = "", line: int | None = None) -> M:
    """Validate one record of a source file; the error names `file`, `line` and the field under `where`."""
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = tuple(first["loc"])
        path = field_path(loc, prefix=where) if loc else where or None
        raise CollectionError(describe_error(first), file=file, line=line, field=path) from None


def build_trace(
    fields: Mapping[str, object], *, file: str, line: int | None = None, locate: Callable[[str], str] = lambda f: f
) -> Trace:
    """`Trace(**fields)`, with a validation error located in the source: `locate` maps a trace field to its path."""
    try:
        return Trace.model_validate(dict(fields))
    except ValidationError as e:
        trace_field, reason = describe_trace_error(e)
        raise CollectionError(reason, file=file, line=line, field=locate(trace_field)) from None
