"""A federation hub: a folder of per-project contributions, a versioned global store, a policy and a journal.

```
HUB/hub.json                      marker {"format": "ace-federation-hub", "format_version": 1}
HUB/policy.toml                   who may promote / revoke (names or "*"), the thresholds
HUB/contributions/<project>.json  each project's last push (redacted), replaced whole by the next push
HUB/global/                       the global skillbook, a `SkillbookStore` (immutable versions)
HUB/rejections/<cluster>.json     a reviewer's rejection of a cluster: who, why (redacted)
HUB/journal.jsonl                 content-free audit: only the fields of `JOURNAL_FIELDS`, one event a line
```

Promotions and revocations are versions of the global store: each version's `produced_by.details` records the
action, the cluster, the global skill id, the member hashes and projects, who and why; nothing else holds them.

Every change takes the hub's OS lock (`HUB/.lock`, released by the OS when its holder dies) and writes files by
temporary file and rename, so a killed process leaves the hub as it was before or after its change.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.core.insight_source import utc_now
from ace.core.storage import atomic_write, json_writer
from ace.deduplication.detector import DEFAULT_THRESHOLD
from ace.exceptions import UserError
from ace_eval.run.lock import file_lock
from ace_eval.store import SkillbookStore

__all__ = [
    "HUB_ENV",
    "JOURNAL_FIELDS",
    "FederationError",
    "Hub",
    "HubBusyError",
    "Policy",
    "resolve_hub",
]

HUB_ENV = "ACE_FEDERATION_HUB"
HUB_FORMAT = "ace-federation-hub"
HUB_WAIT_S = 120.0
JOURNAL_FIELDS = frozenset(
    {"event", "at", "project", "by", "cluster", "global_id", "hashes", "projects", "counts", "decision", "version"}
)
"""The only keys a journal line may hold: ids, hashes, project names, counts, decisions, who and when; no text."""
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class FederationError(UserError):
    """A federation request refused before anything was written (exit 2, the message names the fix)."""


class HubBusyError(FederationError, RuntimeError):
    """Another process held the hub's lock for longer than a writer waits."""

    def __init__(self, root: Path, holder: Mapping[str, object]) -> None:
        super().__init__(
            f"{root} is being changed by process {holder.get('pid', '?')} for more than {HUB_WAIT_S:.0f} s: wait "
            "for it, or stop it and try again; nothing was written"
        )


@dataclass(frozen=True)
class Policy:
    """`policy.toml`: who may promote and revoke, and the thresholds (defaults when the file is missing)."""

    promoters: tuple[str, ...] = ("*",)
    revokers: tuple[str, ...] = ("*",)
    min_projects: int = 3
    max_contradictions: int = 2
    min_helpful: int = 1
    """Eligibility: a skill is contributed when visible, helpful > harmful and helpful >= `min_helpful`."""
    threshold: float = DEFAULT_THRESHOLD
    """Cosine at or above which two skills of one section are the same skill (the dedup threshold)."""

    def may(self, action: str, who: str) -> bool:
        names = self.promoters if action == "promote" else self.revokers
        return "*" in names or who in names

    @classmethod
    def read(cls, path: Path) -> Policy:
        if not path.is_file():
            return cls()
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise FederationError(f"{path}: not valid TOML ({e}); fix it, nothing was written") from None
        known = {"promoters", "revokers", "min_projects", "max_contradictions", "min_helpful", "threshold"}
        unknown = set(raw) - known
        if unknown:
            raise FederationError(f"{path}: unknown key(s) {sorted(unknown)} (known: {', '.join(sorted(known))})")
        try:
            return cls(
                promoters=tuple(_names(raw.get("promoters", ["*"]), "promoters", path)),
                revokers=tuple(_names(raw.get("revokers", ["*"]), "revokers", path)),
                min_projects=_count(raw.get("min_projects", 3), "min_projects", path),
                max_contradictions=_count(raw.get("max_contradictions", 2), "max_contradictions", path),
                min_helpful=_count(raw.get("min_helpful", 1), "min_helpful", path),
                threshold=float(raw.get("threshold", DEFAULT_THRESHOLD)),
            )
        except (TypeError, ValueError) as e:
            raise FederationError(f"{path}: {e}") from None


def _names(value: object, key: str, path: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise FederationError(f'{path}: {key} must be a list of names or ["*"], got {value!r}')
    return list(value)


def _count(value: object, key: str, path: Path) -> int:
    if type(value) is not int or value < 1:
        raise FederationError(f"{path}: {key} must be a whole number >= 1, got {value!r}")
    return value


def check_project(name: str) -> str:
    if not _PROJECT.match(name):
        raise FederationError(
            f"project name {name!r}: use letters, digits, '.', '_' or '-' (up to 64, starting with a letter or digit)"
        )
    return name


def resolve_hub(given: str | os.PathLike[str] | None, cwd: Path | None = None) -> Path:
    """`--hub`, else `$ACE_FEDERATION_HUB`, else `[federation] hub` of `./ace-eval.toml`; none of them: refused."""
    if given:
        return Path(given)
    if os.environ.get(HUB_ENV):
        return Path(os.environ[HUB_ENV])
    config = (cwd or Path.cwd()) / "ace-eval.toml"
    if config.is_file():
        try:
            table = tomllib.loads(config.read_text(encoding="utf-8")).get("federation", {})
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise FederationError(f"{config}: not valid TOML ({e})") from None
        hub = table.get("hub") if isinstance(table, dict) else None
        if isinstance(hub, str):
            return config.parent / hub
    raise FederationError(
        f"no hub given: pass --hub PATH, set {HUB_ENV}, or put `[federation] hub = PATH` in ace-eval.toml"
    )


class Hub:
    """The hub folder at `root` (created on first push)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @property
    def name(self) -> str:
        return self.root.resolve().name

    @property
    def source_system(self) -> str:
        """The `source_system` of the occurrences a pull writes."""
        return f"federation:{self.name}"

    @property
    def contributions_dir(self) -> Path:
        return self.root / "contributions"

    @property
    def journal_path(self) -> Path:
        return self.root / "journal.jsonl"

    def exists(self) -> bool:
        return (self.root / "hub.json").is_file()

    def require(self) -> Hub:
        if not self.exists():
            raise FederationError(
                f"{self.root} is not a federation hub (no hub.json): push a project first "
                f"(ace-eval federate push SKILLBOOK --project NAME --hub {self.root})"
            )
        return self

    def create(self) -> None:
        if self.exists():
            return
        if self.root.is_dir() and any(p.name != ".lock" for p in self.root.iterdir()):
            raise FederationError(f"{self.root} is a folder with files but not a hub: pass a new or empty folder")
        self.contributions_dir.mkdir(parents=True, exist_ok=True)
        SkillbookStore.open_or_create(self.root / "global")
        atomic_write(self.root / "hub.json", json_writer({"format": HUB_FORMAT, "format_version": 1}))

    def policy(self) -> Policy:
        return Policy.read(self.root / "policy.toml")

    def global_store(self) -> SkillbookStore:
        return SkillbookStore.open_or_create(self.root / "global")

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with file_lock(self.root / ".lock", lambda holder: HubBusyError(self.root, holder), wait_s=HUB_WAIT_S):
            yield

    # ------------------------------------------------------------------------------------------ contributions
    def contributions(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        if not self.contributions_dir.is_dir():
            return out
        for path in sorted(self.contributions_dir.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise FederationError(f"{path} is damaged ({e}): the project re-pushes to replace it") from None
            out[str(data["project"])] = data
        return out

    def write_contribution(self, project: str, data: Mapping[str, Any]) -> None:
        atomic_write(self.contributions_dir / f"{project}.json", json_writer(dict(data)))

    # ------------------------------------------------------------------------------------------ rejections
    def rejections(self) -> dict[str, dict[str, Any]]:
        folder = self.root / "rejections"
        if not folder.is_dir():
            return {}
        return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))}

    def write_rejection(self, cluster: str, data: Mapping[str, Any]) -> None:
        (self.root / "rejections").mkdir(exist_ok=True)
        atomic_write(self.root / "rejections" / f"{cluster}.json", json_writer(dict(data)))

    # ------------------------------------------------------------------------------------------ journal
    def journal(self, event: str, **fields: object) -> None:
        """Append one content-free line (only `JOURNAL_FIELDS`; anything else is a programming error)."""
        extra = set(fields) - JOURNAL_FIELDS
        if extra:
            raise ValueError(f"journal fields {sorted(extra)} are not in the whitelist")
        line = json.dumps({"event": event, "at": utc_now(), **fields}, sort_keys=True) + "\n"
        fd = os.open(self.journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def journal_lines(self) -> list[dict[str, Any]]:
        """Every complete line (a line cut by a kill is skipped)."""
        if not self.journal_path.is_file():
            return []
        out: list[dict[str, Any]] = []
        for raw in self.journal_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(raw))
            except json.JSONDecodeError:
                continue
        return out
