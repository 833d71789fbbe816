"""`SkillbookStore`: immutable numbered versions of a skillbook and an atomic `current` pointer.

Publishing takes the store's lock (an OS lock: two publishers get distinct numbers, the second waits), builds the
version in a temporary folder, renames it into place, then moves `current`. Rollback moves `current` only. Nothing
is ever deleted or rewritten; a number is never reused (the next is one past the highest folder or pointer seen).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import JsonValue

from ace.core.insight_source import utc_now
from ace.core.skillbook import Skillbook
from ace.core.storage import atomic_write, json_writer
from ace.exceptions import UserError
from ace.integrations.store_format import (
    MARKER_FILE,
    SKILLBOOK_FILE,
    STORE_FORMAT,
    VERSIONS_DIR,
    StoreFormatError,
    check_marker,
    parse_version_name,
    read_current,
    version_folder,
)
from ace.redaction import Redactor
from ace_eval.store._model import ProducedBy, StoreProblem, Version, VersionRecord, read_version_record
from ace_eval.store._source import read_source
from ace_eval.store._verify import verify_store
from ace_eval.store._write import build_version, remove_temporaries, store_lock, write_pointer

__all__ = ["PUBLISH_WAIT_S", "SkillbookStore", "StoreBusyError"]

PUBLISH_WAIT_S = 120.0
"""How long a publisher waits for another to finish before giving up."""


class StoreBusyError(UserError, RuntimeError):
    """Another process held the store's lock for longer than a publisher waits."""

    def __init__(self, root: Path, holder: Mapping[str, object]) -> None:
        super().__init__(
            f"{root} is being changed by process {holder.get('pid', '?')} (since {holder.get('started_at', '?')}) "
            f"for more than {PUBLISH_WAIT_S:.0f} s: wait for it, or stop it (kill {holder.get('pid', '<pid>')}) "
            "and try again; nothing was written"
        )


class SkillbookStore:
    """A skillbook store at `root` (see `ace.integrations.store_format` for the layout)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        """Open an existing store; a missing folder or one that is not a store is refused, naming the fix."""
        self.root = Path(root)
        check_marker(self.root)

    @classmethod
    def create(cls, root: str | os.PathLike[str]) -> SkillbookStore:
        """Make `root` a new, empty store (the folder may exist, empty); refuses a non-empty folder."""
        path = Path(root)
        if path.exists() and not path.is_dir():
            raise UserError(f"{path} is a file: a store is a folder; pass a new or empty folder")
        if path.is_dir() and (path / MARKER_FILE).is_file():
            raise UserError(f"{path} is a store already: open it (SkillbookStore({str(path)!r}))")
        if path.is_dir() and any(path.iterdir()):
            raise UserError(
                f"{path} is a folder with files in it but not a store: pass a new or empty folder for a new store"
            )
        (path / VERSIONS_DIR).mkdir(parents=True, exist_ok=True)
        atomic_write(path / MARKER_FILE, json_writer({"format": STORE_FORMAT, "format_version": 1}))
        return cls(path)

    @classmethod
    def open_or_create(cls, root: str | os.PathLike[str]) -> SkillbookStore:
        """The store at `root`, created when `root` is missing or an empty folder."""
        path = Path(root)
        if (path / MARKER_FILE).is_file() or (path.is_dir() and any(path.iterdir())):
            return cls(path)
        return cls.create(path)

    # ---------------------------------------------------------------------------------------------- reading
    def current_number(self) -> int | None:
        """The number `current` names (`None` before the first publish)."""
        return read_current(self.root)

    def current(self) -> Version | None:
        """The current version (`None` before the first publish)."""
        number = self.current_number()
        return None if number is None else self.version(number)

    def numbers(self) -> list[int]:
        """The numbers of the versions in `versions/`, ascending (temporary folders are not versions)."""
        try:
            names = os.listdir(self.root / VERSIONS_DIR)
        except FileNotFoundError:
            return []
        return sorted(n for name in names if (n := parse_version_name(name)) is not None)

    def versions(self) -> list[Version]:
        """Every version, oldest first; a damaged `version.json` is refused naming it."""
        return [self.version(n) for n in self.numbers()]

    def version(self, number: int) -> Version:
        """Version `number`; an unknown number is refused with the ones there are."""
        folder = version_folder(self.root, number)
        if not folder.is_dir():
            there = ", ".join(str(n) for n in self.numbers()) or "none yet"
            raise UserError(f"{self.root} has no version {number} (versions: {there})")
        return Version.of(read_version_record(folder, number), folder)

    def skillbook_path(self, version: int | None = None) -> Path:
        """The skillbook file of `version` (default: the current one)."""
        return self._pick(version).skillbook_path

    def load(self, version: int | None = None) -> Skillbook:
        """The skillbook of `version` (default: the current one)."""
        return Skillbook.load_from_file(self.skillbook_path(version))

    def _pick(self, version: int | None) -> Version:
        if version is not None:
            return self.version(version)
        current = self.current()
        if current is None:
            raise StoreFormatError(
                f"{self.root} has no version yet: publish one (ace-eval skillbook publish SKILLBOOK --to {self.root})"
            )
        return current

    def verify(self) -> list[StoreProblem]:
        """Recompute every file's SHA-256 and check the pointer, lineage and folder contents; [] when all is well."""
        return verify_store(self.root, self.numbers())

    # ---------------------------------------------------------------------------------------------- writing
    def publish(
        self,
        source: str | os.PathLike[str],
        *,
        produced_by: ProducedBy,
        gate: Mapping[str, JsonValue] | None = None,
        ungated_reason: str | None = None,
    ) -> Version:
        """Publish the skillbook at `source` (a `skillbook.json` with its sidecars, or a run folder) as a new
        version and make it current. Either `gate` (the gate's evidence) or `ungated_reason` is required.

        Raises:
            UserError: `source` is not a skillbook, neither or both of `gate` / `ungated_reason` were given, or
                the store stayed busy (nothing is written in any of these cases).
        """
        if (gate is None) == (ungated_reason is None or not ungated_reason.strip()):
            raise UserError(
                "publish needs the gate's evidence (gate=...) or, to publish ungated, a reason (ungated_reason=...), "
                "not both"
            )
        found = read_source(Path(source).absolute())
        redactor = Redactor()
        by = produced_by.model_copy(update={"run_dir": str(found.run_dir)} if found.run_dir is not None else {})
        if by.source is None:
            by = by.model_copy(update={"source": str(found.skillbook)})
        if found.run_dir is not None and by.run_id is None:
            by = by.model_copy(update={"run_id": found.run_dir.name})
        by = ProducedBy.model_validate(redactor.redact_data(by.model_dump(mode="json"))[0])
        reason = redactor.redact_text(ungated_reason) if ungated_reason is not None else None
        with store_lock(self.root, lambda holder: StoreBusyError(self.root, holder), wait_s=PUBLISH_WAIT_S):
            remove_temporaries(self.root)
            parent = self.current_number()
            number = max([0, *self.numbers(), parent or 0]) + 1

            def record(hashes: dict[str, str]) -> dict[str, object]:
                if found.digest is not None and hashes[SKILLBOOK_FILE] != found.digest:
                    raise UserError(
                        f"{found.skillbook} changed while it was being published (another process writes it): "
                        "publish it again once that process is done; nothing was published"
                    )
                made = VersionRecord(
                    number=number,
                    parent=parent,
                    created_at=utc_now(),
                    produced_by=by,
                    files=hashes,
                    gate=dict(gate) if gate is not None else None,
                    ungated_reason=reason,
                )
                return made.model_dump(mode="json")

            build_version(self.root, number, found.files, record)
            write_pointer(self.root, number)
        return self.version(number)

    def publish_skillbook(
        self,
        skillbook: Skillbook,
        *,
        produced_by: ProducedBy,
        gate: Mapping[str, JsonValue] | None = None,
        ungated_reason: str | None = None,
    ) -> Version:
        """Publish an in-memory skillbook (saved with its sidecars to a temporary folder of the system first, then
        published as `publish` does; the temporary folder goes either way)."""
        with tempfile.TemporaryDirectory(prefix="ace-publish-") as tmp:
            path = Path(tmp) / SKILLBOOK_FILE
            skillbook.save_to_file(path)
            return self.publish(path, produced_by=produced_by, gate=gate, ungated_reason=ungated_reason)

    def rollback(self, to: int | None = None) -> Version:
        """Make version `to` current (default: the current version's parent); deletes nothing. The target is
        verified first: a version whose files do not match their hashes is refused."""
        with store_lock(self.root, lambda holder: StoreBusyError(self.root, holder), wait_s=PUBLISH_WAIT_S):
            if to is None:  # with `to`, a damaged or dangling `current` is not read: rolling back is its fix
                current = self.current()
                if current is None:
                    raise UserError(f"{self.root} has no version yet: there is nothing to roll back")
                if current.parent is None:
                    raise UserError(
                        f"version {current.number} of {self.root} is the first: it has no parent to roll back to; "
                        "pass --to N to pick a version"
                    )
                to = current.parent
            target = self.version(to)
            damaged = verify_store(self.root, [to], pointer=False)
            if damaged:
                raise UserError(f"version {to} does not verify ({damaged[0]}); pick another with --to N")
            write_pointer(self.root, target.number)
        return target

    def __repr__(self) -> str:
        return f"SkillbookStore({str(self.root)!r})"
