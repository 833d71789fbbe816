"""The inbox's segment files: rotated at a size, read back in order across segments, deleted once assembled; the
acknowledged count survives every crash window of rotation and deletion (a torn record, a kill between the
checkpoint and the deletion, a kill halfway through the deletion)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace.exceptions import RunError
from ace_eval.serve._assembly import Assembler
from ace_eval.serve._inbox import Committed, Inbox
from ace_eval.serve._segments import Segments


def _fill(inbox: Inbox, count: int) -> list[bytes]:
    payloads = [json.dumps({"request": n, "pad": "x" * (n * 37 % 300)}).encode() for n in range(count)]
    for n, payload in enumerate(payloads):
        inbox.append(payload, n % 4 + 1, encoding="json")
    return payloads


def _crash(inbox: Inbox) -> None:
    """Stop the writer the way a kill does: no checkpoint, files left as they are."""
    with inbox._cond:
        inbox._closed = True
        inbox._cond.notify_all()
    inbox._writer.join(timeout=10)
    inbox.segments.close()


def _total(count: int) -> int:
    return sum(n % 4 + 1 for n in range(count))


def test_records_rotate_into_segments_and_read_back_in_order(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    payloads = _fill(inbox, 40)
    _crash(inbox)
    files = sorted((tmp_path / "inbox").glob("*.seg"))
    assert len(files) > 5 and all(f.stat().st_size < 1000 + 500 for f in files)
    again = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    assert again.acknowledged == _total(40)  # counted from the records: no checkpoint was written
    records = list(again.records())
    assert [r.payload for r in records] == payloads and [r.spans for r in records] == [n % 4 + 1 for n in range(40)]
    assert [r.offset for r in records[1:]] == [r.offset + r.length for r in records[:-1]]
    middle = records[20].offset
    assert [r.payload for r in again.records(middle)] == payloads[20:]
    again.close()


def test_release_checkpoints_then_deletes_the_assembled_segments(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    payloads = _fill(inbox, 40)
    records = list(inbox.records())
    before = len(list((tmp_path / "inbox").glob("*.seg")))
    deleted = inbox.release(records[25].offset)
    assert deleted and all(int(p.stem) < records[25].offset for p in deleted)
    assert len(list((tmp_path / "inbox").glob("*.seg"))) == before - len(deleted)
    assert json.loads((tmp_path / "state.json").read_text())["spans_acknowledged"] == _total(40)
    assert [r.payload for r in inbox.records(records[25].offset)] == payloads[25:]
    payloads += _fill(inbox, 3)  # appending goes on in the current segment
    _crash(inbox)
    again = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    assert again.acknowledged == _total(40) + _total(3)
    assert [r.payload for r in again.records(records[25].offset)] == payloads[25:]
    again.close()


def test_a_kill_halfway_through_the_deletion_loses_no_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inbox = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    _fill(inbox, 40)
    offset = list(inbox.records())[30].offset
    unlink = Path.unlink
    calls: list[Path] = []

    def killed_after_one(path: Path, missing_ok: bool = False) -> None:
        if calls:
            raise KeyboardInterrupt  # the kill: nothing after this runs
        calls.append(path)
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        inbox.release(offset)
    monkeypatch.undo()
    _crash(inbox)
    again = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    assert again.acknowledged == _total(40) and len(list(again.records(offset))) == 10
    assert again.release(offset)  # the rest goes at the next release
    again.close()


def test_a_kill_before_the_deletion_keeps_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inbox = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    payloads = _fill(inbox, 40)
    offset = list(inbox.records())[30].offset
    monkeypatch.setattr(Segments, "delete_before", lambda self, offset: [])  # killed right after the checkpoint
    inbox.release(offset)
    monkeypatch.undo()
    _crash(inbox)
    again = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    assert again.acknowledged == _total(40) and [r.payload for r in again.records()] == payloads
    again.close()


def test_a_torn_record_after_a_rotation_is_cut_and_a_damaged_older_segment_is_named(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    _fill(inbox, 20)
    _crash(inbox)
    files = sorted((tmp_path / "inbox").glob("*.seg"))
    with files[-1].open("ab") as f:
        f.write(b'{"spans":9,"encoding":"json","bytes":500}\n{"half')  # its fsync never returned: never acknowledged
    again = Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    assert again.acknowledged == _total(20) and len(list(again.records())) == 20
    _crash(again)
    with files[0].open("r+b") as f:
        f.truncate(files[0].stat().st_size - 3)
    with pytest.raises(RunError, match=files[0].name):
        Inbox(tmp_path, max_backlog=10_000, segment_bytes=1000)


class _RacyInbox(Inbox):
    """An inbox whose writer commits `armed` right when the assembler reads `committed_offset`."""

    armed: list[Committed] = []  # noqa: RUF012

    @property
    def committed_offset(self) -> int:
        if self.armed:
            self.committed.extend(self.armed)
            self.armed = []
        return self._offset

    @committed_offset.setter
    def committed_offset(self, value: int) -> None:
        self._offset = value


def test_records_read_from_the_file_are_not_taken_again_from_memory(tmp_path: Path) -> None:
    """The writer commits between the assembler's look at `committed` (empty) and at `committed_offset`: the records
    are read from the file, and their entries in `committed` are then skipped, not taken twice."""
    inbox = _RacyInbox(tmp_path, max_backlog=10_000, segment_bytes=1000)
    body = b'{"resourceSpans":[]}'
    for _ in range(3):
        inbox.append(body, 0, encoding="json")
    assembler = Assembler(inbox, tmp_path, feedback_wait=0, settle=0.0)
    inbox.armed = list(inbox.committed)
    inbox.committed.clear()
    assembler.step()
    assert assembler._read_to == inbox.committed_offset == sum(r.length for r in inbox.records())
    inbox.close()
