"""A store where a skillbook path is asked for (`ace-eval e2e --skillbook STORE`): the current version's file, and,
for a file inside a store, which store and version it is (recorded in `run.json` so the gate knows the incumbent)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ace.integrations.store_format import (
    SKILLBOOK_FILE,
    VERSIONS_DIR,
    current_skillbook_path,
    is_store,
    parse_version_name,
)

__all__ = ["StoreOrigin", "resolve_skillbook", "store_origin"]


@dataclass(frozen=True)
class StoreOrigin:
    """The store and version a skillbook file belongs to."""

    store: Path
    version: int

    def to_dict(self) -> dict[str, object]:
        return {"store": str(self.store), "version": self.version}


def resolve_skillbook(path: Path) -> Path:
    """`path` itself, or, when it is a store, its current version's `skillbook.json` (pinned: a later publish does
    not change a run that already started)."""
    return current_skillbook_path(path) if is_store(path) else path


def store_origin(path: Path | None) -> StoreOrigin | None:
    """Which store version `path` is (`STORE/versions/NNNN/skillbook.json`); `None` for any other file."""
    if path is None or path.name != SKILLBOOK_FILE:
        return None
    number = parse_version_name(path.parent.name)
    root = path.parent.parent.parent
    if number is None or path.parent.parent.name != VERSIONS_DIR or not is_store(root):
        return None
    return StoreOrigin(root, number)
