"""What a version is: `version.json` (pydantic, written and read by the same model) and the `Version` handed out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ace.core.storage import read_json_file
from ace.exceptions import SkillbookFormatError
from ace.integrations.store_format import SKILLBOOK_FILE, VERSION_FILE, StoreFormatError
from ace.json_safe import JsonInputError

__all__ = ["VERSION_FORMAT", "ProducedBy", "StoreProblem", "Version", "VersionRecord", "read_version_record"]

VERSION_FORMAT = 1


class ProducedBy(BaseModel):
    """Who made a version: a run (its folder and id), a command a person typed, or another producer (trials,
    serve, federation) naming itself in `kind`. Texts are redacted before they are written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(min_length=1, max_length=64)
    """`run`, `command`, or the producer's own name (`trials`, `serve`, `federation`, ...)."""
    command: str | None = None
    """The command line that published it, when one did."""
    run_dir: str | None = None
    """The run folder the skillbook came from, when it came from one."""
    run_id: str | None = None
    """That run's id (`run_<12 hex>`)."""
    source: str | None = None
    """The skillbook file that was published (a run's `skillbook.json`, or a file a person named)."""
    details: dict[str, JsonValue] = Field(default_factory=dict)
    """Anything else the producer wants on record (a trial's name, a hub's cluster)."""


class VersionRecord(BaseModel):
    """`versions/NNNN/version.json`: written once, inside the version's temporary folder, before it is renamed into
    place; never changed after."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: int = VERSION_FORMAT
    number: int = Field(ge=1)
    parent: int | None = Field(default=None, ge=1)
    """The version that was current when this one was published (`None` for the first)."""
    created_at: str
    produced_by: ProducedBy
    files: dict[str, str]
    """Every other file of the version folder -> the SHA-256 of its bytes."""
    gate: dict[str, JsonValue] | None = None
    """The gate's evidence (its JSON as the gate wrote it) when the version was gated."""
    ungated_reason: str | None = None
    """Why it was published without a gate (then `gate` is `None`)."""


@dataclass(frozen=True, kw_only=True)
class Version:
    """One version of a store, as its `version.json` says."""

    number: int
    parent: int | None
    created_at: str
    produced_by: ProducedBy
    files: Mapping[str, str]
    gate: Mapping[str, JsonValue] | None
    ungated_reason: str | None
    folder: Path
    """`STORE/versions/NNNN`."""
    record: VersionRecord = field(repr=False)

    @property
    def skillbook_path(self) -> Path:
        """The version's `skillbook.json`."""
        return self.folder / SKILLBOOK_FILE

    @property
    def gated(self) -> bool:
        """Whether it passed the gate (else it says why it was published ungated)."""
        return self.gate is not None

    def to_dict(self) -> dict[str, Any]:
        """The `version.json` fields plus the folder, for `--json` output and the report."""
        return {**self.record.model_dump(mode="json"), "folder": str(self.folder)}

    @classmethod
    def of(cls, record: VersionRecord, folder: Path) -> Version:
        """The version `record` describes, kept in `folder`."""
        return cls(
            number=record.number,
            parent=record.parent,
            created_at=record.created_at,
            produced_by=record.produced_by,
            files=dict(record.files),
            gate=record.gate,
            ungated_reason=record.ungated_reason,
            folder=folder,
            record=record,
        )


@dataclass(frozen=True)
class StoreProblem:
    """What `verify` found wrong in one file of a store."""

    path: Path
    message: str

    def __str__(self) -> str:
        return self.message if self.message.startswith(str(self.path)) else f"{self.path}: {self.message}"


def read_version_record(folder: Path, number: int) -> VersionRecord:
    """`folder/version.json`, checked (its number is its folder's); a damaged one is refused naming the file."""
    path = folder / VERSION_FILE
    fix = (
        "a version is never rewritten, so restore this file from a backup, or point `current` at another version "
        f"(ace-eval skillbook rollback {folder.parent.parent} --to N)"
    )
    if not path.is_file():
        raise StoreFormatError(f"{path} is missing: {folder} is not a whole version; {fix}")
    try:
        record = VersionRecord.model_validate(read_json_file(path))
    except (SkillbookFormatError, JsonInputError) as e:
        raise StoreFormatError(f"{e}; {fix}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise StoreFormatError(f"{path}: not a version record ({where}: {first['msg']}); {fix}") from None
    if record.number != number:
        raise StoreFormatError(f"{path}: says version {record.number} but sits in folder {folder.name}; {fix}")
    if SKILLBOOK_FILE not in record.files:
        raise StoreFormatError(f"{path}: lists no {SKILLBOOK_FILE}; {fix}")
    return record
