"""Writing a trace collection: one fsynced line per trace, the manifest replaced atomically."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, BinaryIO, Literal

from ace import json_safe
from ace.core.storage import atomic_write, json_writer
from ace.redaction import Redactor
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.collection.model import (
    MANIFEST_FILE,
    TRACES_FILE,
    CollectionCounts,
    CollectionError,
    CollectionManifest,
    Trace,
    TraceCounter,
    utc_now,
)
from ace_eval.collection.read import parse_trace_lines, read_manifest, split_lines

__all__ = ["CollectionWriter", "WriteMode", "redact_manifest_fields", "repair_collection", "write_collection"]

WriteMode = Literal["create", "append", "auto"]


class CollectionWriter:
    """Append traces to a collection folder; use as a context manager (`close()` writes the final manifest).

    `mode="create"` refuses a folder that already holds a collection, `"append"` continues one (a resumed
    run: a line cut off by a kill is dropped, the counts are recomputed), `"auto"` does whichever applies.
    With `durable=True` (the default) every line is fsynced and the manifest rewritten after each trace,
    so a killed run leaves a valid collection of every finished trace; `durable=False` (bulk imports)
    writes the manifest on `flush()` and `close()` only. Safe to call from several threads.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        source_system: str | None = None,
        benchmark: str | None = None,
        models: Mapping[str, str] | None = None,
        description: str | None = None,
        metadata: Mapping[str, object] | None = None,
        success_threshold: float | None = None,
        mode: WriteMode = "create",
        durable: bool = True,
        redactor: Redactor | None = None,
    ) -> None:
        self.directory = Path(directory)
        if redactor is not None:  # every field of the manifest, as the run's sinks are (the traces are the caller's)
            fields = redact_manifest_fields(
                redactor,
                source_system=source_system,
                benchmark=benchmark,
                models=models or {},
                description=description,
                metadata=metadata or {},
            )
            source_system, benchmark, description = fields["source_system"], fields["benchmark"], fields["description"]
            models, metadata = fields["models"], fields["metadata"]
        self.durable = durable
        self.dropped_partial_line = False
        """True when appending removed an unfinished last line left by a killed writer."""
        self._lock = threading.Lock()
        self._uids: set[str] = set()
        exists = (self.directory / MANIFEST_FILE).exists() or (self.directory / TRACES_FILE).exists()
        if mode == "auto":
            mode = "append" if exists else "create"
        if mode == "create":
            if exists:
                raise CollectionError(
                    "already holds a trace collection: append to it (mode='append') or choose an empty folder",
                    file=str(self.directory),
                )
            if source_system is None:
                raise CollectionError("a new collection needs a source_system (e.g. 'tau-bench-airline')")
            self._manifest = CollectionManifest(
                source_system=source_system,
                benchmark=benchmark,
                models=dict(models or {}),
                description=description,
                metadata=dict(metadata or {}),
                success_threshold=1.0 if success_threshold is None else success_threshold,
            )
            self._counter = TraceCounter(success_threshold=self._manifest.success_threshold)
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / TRACES_FILE).touch()
        else:
            old = read_manifest(self.directory)
            if source_system is not None and source_system != old.source_system:
                raise CollectionError(
                    f"{source_system!r} differs from the collection's {old.source_system!r}: write to another folder",
                    file=str(self.directory / MANIFEST_FILE),
                    field="source_system",
                )
            updates: dict[str, object] = {}
            if benchmark is not None:
                updates["benchmark"] = benchmark
            if models:
                updates["models"] = {**old.models, **models}
            if description is not None:
                updates["description"] = description
            if metadata:
                updates["metadata"] = {**old.metadata, **metadata}
            if success_threshold is not None:
                updates["success_threshold"] = success_threshold
            self._manifest = old.model_copy(update=updates)
            self._counter = TraceCounter(success_threshold=self._manifest.success_threshold)
            self._load_existing()
        self._file: BinaryIO | None = (self.directory / TRACES_FILE).open("ab")
        self._write_manifest()

    @property
    def traces_path(self) -> Path:
        """`DIR/traces.jsonl`."""
        return self.directory / TRACES_FILE

    @property
    def source_system(self) -> str:
        """The source system every trace of this collection has."""
        return self._manifest.source_system

    @property
    def counts(self) -> CollectionCounts:
        """The counts of every trace written so far (including those already in an appended collection)."""
        return self._counter.counts()

    @property
    def manifest(self) -> CollectionManifest:
        """The manifest as it stands (counts included)."""
        return self._manifest.model_copy(update={"counts": self.counts})

    @property
    def trace_uids(self) -> frozenset[str]:
        """Uids already in the collection: a resumed run skips these."""
        with self._lock:
            return frozenset(self._uids)

    def __contains__(self, trace_uid: object) -> bool:
        with self._lock:
            return trace_uid in self._uids

    def append(self, trace: Trace) -> None:
        """Write one trace as a line; refuse a duplicate uid or another source system."""
        if not isinstance(trace, Trace):
            raise TypeError(f"append() takes a Trace, got {type(trace).__name__}: build one with Trace(...)")
        line = trace.model_dump_json().encode("utf-8") + b"\n"
        with self._lock:
            if self._file is None:
                raise CollectionError("the writer is closed: open a new CollectionWriter(mode='append')")
            if trace.source_system != self.source_system:
                raise CollectionError(
                    f"{trace.source_system!r} differs from the collection's {self.source_system!r}: "
                    "write it to a collection of its own",
                    file=str(self.traces_path),
                    field="source_system",
                )
            if trace.trace_uid in self._uids:
                raise CollectionError(
                    f"{trace.trace_uid!r} is already in the collection: give each run its own trace_id",
                    file=str(self.traces_path),
                    field="trace_uid",
                )
            self._file.write(line)
            self._file.flush()
            if self.durable:
                os.fsync(self._file.fileno())
            self._count(trace)
            if self.durable:
                self._write_manifest()

    def extend(self, traces: Iterable[Trace]) -> None:
        """Append each trace in order."""
        for trace in traces:
            self.append(trace)

    def flush(self) -> None:
        """Fsync the lines written so far and rewrite the manifest with their counts."""
        with self._lock:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())
            self._write_manifest()

    def close(self) -> None:
        """Flush and close; calling it again does nothing."""
        if self._file is None:
            return
        self.flush()
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> CollectionWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _count(self, trace: Trace) -> None:
        self._uids.add(trace.trace_uid)
        self._counter.add(trace)

    def _write_manifest(self) -> None:
        self._manifest = self._manifest.model_copy(update={"counts": self.counts, "updated_at": utc_now()})
        write_json = json_writer(self._manifest.model_dump(mode="json"))

        def write(f: IO[bytes]) -> None:
            os.fchmod(f.fileno(), 0o644)  # the temporary file is private (0600); a collection is shared
            write_json(f)

        atomic_write(self.directory / MANIFEST_FILE, write)

    def _load_existing(self) -> None:
        path = self.traces_path
        data, tail, partial, traces = _read_existing(path, self.source_system)
        for trace in traces:
            self._count(trace)
        if partial:  # a kill mid-write: the trace was not finished, dropping it loses nothing
            with path.open("r+b") as f:
                f.truncate(len(data) - len(tail))
                os.fsync(f.fileno())
            self.dropped_partial_line = True
        elif tail.strip():
            with path.open("ab") as f:
                f.write(b"\n")


def _read_existing(path: Path, source_system: str) -> tuple[bytes, bytes, bool, list[Trace]]:
    """(bytes, unterminated tail, whether the tail is a partial line, the traces) of a collection's `traces.jsonl`,
    every complete line checked; writes nothing."""
    try:
        data = json_safe.read_bytes(path) if path.exists() else b""
        lines, tail = split_lines(data)
        if tail.strip():
            json_safe.loads(tail, file=str(path), line=data.count(b"\n") + 1)
        partial = False
    except json_safe.JsonInputError as e:
        if e.kind not in ("syntax", "encoding"):
            raise CollectionError.from_json(e) from None
        partial = True
    complete = [*lines, (data.count(b"\n") + 1, tail)] if tail.strip() and not partial else lines
    traces = list(parse_trace_lines(complete, file=str(path), source_system=source_system))
    return data, tail, partial and bool(tail.strip()), traces


def redact_manifest_fields(redactor: Redactor, **fields: Any) -> dict[str, Any]:
    """Manifest fields (`source_system`, `models`, `metadata`, ...) with every string redacted, un-numbered as the
    sinks write them; `source_system` as an id (`id_placeholder`), the same as in the traces' uids."""
    clean: dict[str, Any] = redactor.redact_data(fields, numbered=False, skip_keys=TRACE_ID_FIELDS)[0]
    return clean


def write_collection(
    directory: str | os.PathLike[str],
    traces: Iterable[Trace],
    *,
    source_system: str,
    benchmark: str | None = None,
    models: Mapping[str, str] | None = None,
    description: str | None = None,
    metadata: Mapping[str, object] | None = None,
    redactor: Redactor | None = None,
) -> CollectionManifest:
    """Write a new collection of `traces` in one go (bulk: one fsync at the end) and return its manifest; with a
    `redactor`, every field of the manifest is redacted (the traces are written as given)."""
    with CollectionWriter(
        directory,
        redactor=redactor,
        source_system=source_system,
        benchmark=benchmark,
        models=models,
        description=description,
        metadata=metadata,
        durable=False,
    ) as writer:
        writer.extend(traces)
    return writer.manifest


def repair_collection(
    directory: str | os.PathLike[str], *, allow_empty: bool = False
) -> tuple[CollectionManifest, bool]:
    """Drop a line cut off by a killed writer and recount the manifest; returns (manifest, dropped a line).

    A folder with `traces.jsonl` and no `manifest.json` gets one, its `source_system` taken from the first trace.
    A repair that would leave no trace of a manifest that counts some is refused (nothing written) unless
    `allow_empty`: an emptied `traces.jsonl` is more likely a mistake than an interrupted write.
    """
    folder = Path(directory)
    if not (folder / MANIFEST_FILE).exists() and (folder / TRACES_FILE).is_file():
        _write_missing_manifest(folder)
    if not allow_empty:
        old = read_manifest(directory)
        path = folder / TRACES_FILE
        _, _, _, traces = _read_existing(path, old.source_system)
        if not traces and old.counts.traces:
            raise CollectionError(
                f"holds no complete trace, while the manifest counts {old.counts.traces}: a repair would empty the "
                "collection. Restore traces.jsonl from a backup, or pass --allow-empty to recount it as empty",
                file=str(path),
            )
    with CollectionWriter(directory, mode="append") as writer:
        pass
    return writer.manifest, writer.dropped_partial_line


def _write_missing_manifest(folder: Path) -> None:
    """A manifest for the traces of `folder` (counted by the repair that follows), from its first line."""
    path = folder / TRACES_FILE
    first = next((line for line in path.read_bytes().split(b"\n") if line.strip()), b"")
    try:
        record = json_safe.loads(first, file=str(path), line=1) if first else None
    except json_safe.JsonInputError:
        raise
    except ValueError:
        raise CollectionError("not valid JSON: fix or remove the line", file=str(path), line=1) from None
    source = record.get("source_system") if isinstance(record, dict) else None
    if not isinstance(source, str) or not source:
        raise CollectionError(
            "missing: the manifest takes the collection's source_system from the first trace; add it to every line",
            file=str(path),
            line=1,
            field="source_system",
        )
    manifest = CollectionManifest(source_system=source, metadata={"manifest": "written by ace-eval collection repair"})
    data = manifest.model_dump_json(indent=1).encode("utf-8")

    def write(f: IO[bytes]) -> None:
        os.fchmod(f.fileno(), 0o644)
        f.write(data)

    atomic_write(folder / MANIFEST_FILE, write)
