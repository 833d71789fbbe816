"""The airline data folder: database tables, policy and tasks, loaded and checked at the boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ace import json_safe
from ace.exceptions import UserError

__all__ = [
    "DATA_FILES",
    "FETCH_HINT",
    "TABLES",
    "Action",
    "AirlineData",
    "DataFolderError",
    "Table",
    "Task",
    "load_airline_data",
    "load_tasks",
]

TABLES = ("flights", "reservations", "users")
"""The database tables, each a JSON object keyed by id (flight number, reservation id, user id)."""
DATA_FILES = ("flights.json", "reservations.json", "users.json", "wiki.md", "tasks_test.json")
"""Every file a data folder must hold."""
FETCH_HINT = "run `ace-eval data fetch tau-bench --dest DIR` (needs internet) or pass --data-dir to a folder holding it"

Table = dict[str, dict[str, Any]]


class DataFolderError(UserError, FileNotFoundError):
    """A data folder that is missing a file or holds one that cannot be read; the message names file and fix."""


class Action(BaseModel):
    """One gold action of a task: a tool name and its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(min_length=1)
    kwargs: dict[str, Any]


class Task(BaseModel):
    """One benchmark task: the simulated user's instruction, the gold actions and the required outputs."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    annotator: str | None = None
    user_id: str
    instruction: str
    actions: list[Action]
    outputs: list[str] = Field(default_factory=list)
    """Strings every one of which must appear in some reply of the agent (lower-cased, commas removed)."""


_TASKS = TypeAdapter(list[Task])


class HasTables(Protocol):
    """Anything holding the three airline tables as (read-only) attributes."""

    @property
    def flights(self) -> Table: ...
    @property
    def reservations(self) -> Table: ...
    @property
    def users(self) -> Table: ...


def table_named(db: HasTables, name: str) -> Table:
    """The table `name` (one of `TABLES`) of `db`; `KeyError` for any other name."""
    if name == "flights":
        return db.flights
    if name == "reservations":
        return db.reservations
    if name == "users":
        return db.users
    raise KeyError(name)


@dataclass(frozen=True, eq=False)
class AirlineData:
    """The pristine database, the policy and the tasks of one data folder.

    The tables are shared by every episode and never mutated: an episode's `AirlineDB` copies an entity
    before its first write. `entity_bytes` caches each entity's part of the data hash.
    """

    flights: Table
    reservations: Table
    users: Table
    wiki: str
    tasks: tuple[Task, ...]
    source: Path | None = None
    entity_bytes: dict[tuple[str, str], bytes] = field(default_factory=dict, repr=False)
    """`(table, key) -> repr((key, to_hashable(entity)))` encoded, for entities that still are the originals."""

    def table(self, name: str) -> Table:
        """One of `TABLES` by name."""
        return table_named(self, name)

    def task(self, task_id: int) -> Task:
        """The task at this index; the error names the valid range."""
        if not 0 <= task_id < len(self.tasks):
            raise IndexError(f"task {task_id} does not exist: the data folder has tasks 0-{len(self.tasks) - 1}")
        return self.tasks[task_id]


def _require(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        raise DataFolderError(f"{path} is missing: the tau-bench airline data folder needs {name}; {FETCH_HINT}")
    return path


def _read_json(path: Path) -> Any:
    try:
        return json_safe.read_json(path)
    except json_safe.JsonInputError as e:
        raise DataFolderError(f"{e}; {FETCH_HINT} to get a fresh copy") from None


def _read_table(folder: Path, name: str) -> Table:
    path = _require(folder, f"{name}.json")
    data = _read_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise DataFolderError(f"{path} must be a JSON object of {name} keyed by id; {FETCH_HINT} to get a fresh copy")
    return data


def load_tasks(path: str | Path) -> tuple[Task, ...]:
    """Read and validate `tasks_test.json` (a JSON list of tasks)."""
    p = Path(path)
    try:
        return tuple(_TASKS.validate_python(_read_json(p)))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise DataFolderError(f"{p}: task field {where}: {first['msg']}; {FETCH_HINT} to get a fresh copy") from None


def load_airline_data(data_dir: str | Path) -> AirlineData:
    """Load a tau-bench airline data folder (`DATA_FILES`); a missing file raises `DataFolderError` naming it."""
    folder = Path(data_dir)
    if not folder.is_dir():
        raise DataFolderError(f"{folder} is not a folder: the tau-bench airline data is not there; {FETCH_HINT}")
    for name in DATA_FILES:
        _require(folder, name)
    return AirlineData(
        flights=_read_table(folder, "flights"),
        reservations=_read_table(folder, "reservations"),
        users=_read_table(folder, "users"),
        wiki=_require(folder, "wiki.md").read_text(encoding="utf-8"),
        tasks=load_tasks(_require(folder, "tasks_test.json")),
        source=folder,
    )
