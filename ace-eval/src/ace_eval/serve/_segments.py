"""The inbox's files: records appended to segment files under `STORE/serve/inbox/`, each named by the offset of its
first byte in the whole inbox (`00000000000000000000.seg`), rotated at a size and deleted once assembled.

A record is a header line, its payload and a newline:
`{"spans": N, "encoding": "protobuf" | "json", "bytes": L}\\n` then L bytes (an OTLP `ExportTraceServiceRequest`,
protobuf or JSON, already redacted) then `\\n`. Offsets are counted over every segment ever written, so a record
keeps its offset when older segments are deleted. A record cut short by a crash is the last thing in the last
segment (its fsync had not returned, so it was never acknowledged): `recover` cuts it off.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ace.core.storage import fsync_folder
from ace.exceptions import RunError

__all__ = ["Record", "Segments", "encode_record"]

_SUFFIX = ".seg"
_MAX_HEADER = 200


@dataclass(frozen=True)
class Record:
    """One record: where it starts in the inbox, its length on disk, its span count, and its payload."""

    offset: int
    length: int
    spans: int
    encoding: str
    payload: bytes


def encode_record(spans: int, encoding: str, payload: bytes) -> bytes:
    """The bytes of one record."""
    header = json.dumps({"spans": spans, "encoding": encoding, "bytes": len(payload)}, separators=(",", ":"))
    return b"".join((header.encode("ascii"), b"\n", payload, b"\n"))


def _read_record(f: BinaryIO, offset: int) -> Record | None:
    """The record at the file position, or None at the end or at a torn (or foreign) tail."""
    header = f.readline(_MAX_HEADER)
    if not header.endswith(b"\n"):
        return None
    try:
        fields = json.loads(header)
        spans, encoding, size = int(fields["spans"]), str(fields["encoding"]), int(fields["bytes"])
    except (ValueError, KeyError, TypeError):
        return None
    payload = f.read(size + 1)
    if len(payload) != size + 1 or not payload.endswith(b"\n"):
        return None
    return Record(offset, len(header) + size + 1, spans, encoding, payload[:-1])


class Segments:
    """The segment files of one inbox folder: `append` is called by one writer thread, `records` and
    `delete_before` by one reader (the assembler)."""

    def __init__(self, folder: Path, *, segment_bytes: int) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.starts = sorted(int(p.stem) for p in folder.glob(f"*{_SUFFIX}") if p.stem.isdigit())
        self._file: BinaryIO | None = None
        self.end = 0
        """The offset after the last whole record."""

    def path(self, start: int) -> Path:
        return self.folder / f"{start:020d}{_SUFFIX}"

    def recover(self, offset: int) -> int:
        """Spans in the records from `offset` (a record start, or the end) to the end; the end is set, a torn
        tail of the last segment is cut off. `offset` before the first segment (deleted) starts at the first."""
        if not self.starts:
            self.end = offset
            return 0
        first = max([s for s in self.starts if s <= offset] or [self.starts[0]])
        spans, position = 0, max(offset, self.starts[0])
        for index, start in enumerate(self.starts):
            if start < first:
                continue
            last = index == len(self.starts) - 1
            if start > position:
                raise RunError(f"the inbox misses bytes {position}..{start} before {self.path(start)}: restore it")
            size = self.path(start).stat().st_size
            with self.path(start).open("rb") as f:
                f.seek(position - start)
                while position < start + size and (record := _read_record(f, position)) is not None:
                    spans += record.spans
                    position += record.length
            if position < start + size:
                if not last:
                    raise RunError(f"{self.path(start)} is damaged at byte {position - start}: restore it")
                with self.path(start).open("r+b") as f:
                    f.truncate(position - start)
                    os.fsync(f.fileno())
        self.end = position
        return spans

    def append(self, data: bytes) -> None:
        """Write whole records at the end and fsync them; a new segment starts first when the current one is full."""
        if self._file is None or self._file.tell() >= self.segment_bytes:
            self._rotate()
        assert self._file is not None
        self._file.write(data)
        self._file.flush()
        os.fsync(self._file.fileno())
        self.end += len(data)

    def _rotate(self) -> None:
        current = self.starts[-1] if self.starts else None
        if self._file is not None:
            self._file.close()
            self._file = None
        if current is None or self.path(current).stat().st_size >= self.segment_bytes:
            current = self.end
            self.starts.append(current)
        self._file = self.path(current).open("ab")
        fsync_folder(self.folder)

    def records(self, start: int, end: int) -> Iterator[Record]:
        """The records from offset `start` (a record start) up to offset `end`, read from the files."""
        position, starts = start, list(self.starts)  # the writer thread may add one meanwhile
        for index, first in enumerate(starts):
            following = starts[index + 1] if index + 1 < len(starts) else None
            if position >= end:
                return
            if following is not None and following <= position:
                continue
            with self.path(first).open("rb") as f:
                f.seek(position - first)
                while position < end and (following is None or position < following):
                    record = _read_record(f, position)
                    if record is None:
                        raise RunError(f"{self.path(first)} has no whole record at byte {position - first}")
                    yield record
                    position += record.length

    def delete_before(self, offset: int) -> list[Path]:
        """Delete the segments whose every record ends at or before `offset` (never the one being written)."""
        deleted = []
        while len(self.starts) > 1 and self.starts[1] <= offset:
            path = self.path(self.starts.pop(0))
            path.unlink(missing_ok=True)
            deleted.append(path)
        if deleted:
            fsync_folder(self.folder)
        return deleted

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
