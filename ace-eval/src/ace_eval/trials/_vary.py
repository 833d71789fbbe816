"""A trial's candidates: `--vary KEY=V1,V2` (the cross product) or a `--variants FILE.toml` list, each one set of
e2e settings, checked whole before anything is written."""

from __future__ import annotations

import dataclasses
import itertools
import tomllib
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from ace.exceptions import UserError
from ace_eval.e2e.config import E2ESettings

__all__ = [
    "FIXED",
    "Candidate",
    "VaryError",
    "candidates_from_toml",
    "candidates_from_vary",
    "expand_epochs",
    "varying_keys",
]

FIXED = frozenset(
    {
        "output_dir",
        "config_file",
        "sources",
        "traces",
        "benchmark",
        "benchmark_options",
        "no_benchmark",
        "verbose",
        "review",
        "steps",
    }
)
"""Settings the trial owns (where runs go, what they learn from, how they are scored): never varied."""


class VaryError(UserError):
    """A `--vary` or `--variants` entry that names no e2e setting or gives it a value it cannot take."""


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One way to learn: a name and the settings it varies (typed values)."""

    name: str
    settings: Mapping[str, object]
    """What the candidate varies (as the scoreboard shows it)."""
    learn: Mapping[str, object] | None = None
    """The settings its run learns with when they differ from `settings` (an epoch checkpoint's: one epoch)."""
    start_from: str | None = None
    """The candidate whose learned skillbook this one's run starts from (the previous epoch's checkpoint)."""


def varying_keys() -> list[str]:
    """The e2e settings a trial can vary."""
    return sorted(f.name for f in dataclasses.fields(E2ESettings) if f.name not in FIXED)


def _value(key: str, raw: object, flag: str = "--vary") -> object:
    if key not in varying_keys():
        raise VaryError(f"{flag} {key}: not an e2e setting a trial can vary; valid keys: {', '.join(varying_keys())}")
    hint = typing.get_type_hints(E2ESettings)[key]
    if isinstance(raw, str) and typing.get_origin(hint) is tuple:
        raw = [part for part in raw.split("+") if part]
    if isinstance(raw, str) and raw.lower() in ("none", "null") and type(None) in typing.get_args(hint):
        raw = None
    try:
        return TypeAdapter(hint).validate_python(raw)
    except ValidationError as e:
        problem = e.errors()[0]["msg"]
        raise VaryError(f"{flag} {key}={raw}: {problem}; valid keys: {', '.join(varying_keys())}") from None


def _name(settings: Mapping[str, object]) -> str:
    parts = [f"{k}={'+'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in settings.items()]
    return ",".join(parts).replace("/", "_").replace(":", "_") or "default"


def candidates_from_vary(specs: Sequence[str]) -> list[Candidate]:
    """`KEY=V1,V2` per spec; the candidates are the cross product of the values."""
    axes: dict[str, list[object]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not values.strip():
            raise VaryError(f"--vary {spec!r}: write KEY=V1,V2; valid keys: {', '.join(varying_keys())}")
        if key in axes:
            raise VaryError(f"--vary {key} is given twice; list all its values once: --vary {key}=V1,V2")
        axes[key] = [_value(key, v.strip()) for v in values.split(",")]
    return [
        Candidate(name=_name(dict(zip(axes, combo, strict=True))), settings=dict(zip(axes, combo, strict=True)))
        for combo in itertools.product(*axes.values())
    ]


def candidates_from_toml(path: Path) -> list[Candidate]:
    """`[[candidate]]` tables: an optional `name` and the settings it sets."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise VaryError(f"--variants {path}: cannot be read ({e}); write [[candidate]] tables") from None
    tables = data.get("candidate")
    if not isinstance(tables, list) or not tables:
        raise VaryError(f"--variants {path}: no [[candidate]] tables; write one per candidate (key = value)")
    out: list[Candidate] = []
    for table in tables:
        settings = {k: _value(k, v, f"--variants {path}:") for k, v in table.items() if k != "name"}
        out.append(Candidate(name=str(table.get("name") or _name(settings)), settings=settings))
    return out


def check_candidates(candidates: Sequence[Candidate], base: Mapping[str, object]) -> None:
    """Each candidate's settings together with the shared ones make valid e2e settings; names are unique."""
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        raise VaryError(f"candidate names must differ: {', '.join(names)}")
    for candidate in candidates:
        E2ESettings.from_dict({**base, **candidate.settings})


def expand_epochs(candidates: Sequence[Candidate], base: Mapping[str, object]) -> list[Candidate]:
    """Every epoch's checkpoint of a multi-epoch candidate as a candidate of its own: `NAME@epoch1` learns one epoch,
    `NAME@epoch2` one more epoch from `NAME@epoch1`'s skillbook, and so on (the same total learning as one run of
    N epochs, with each epoch's skillbook kept and scored)."""
    out: list[Candidate] = []
    for candidate in candidates:
        epochs = int(str({**base, **candidate.settings}.get("epochs", 1)))
        if epochs <= 1:
            out.append(candidate)
            continue
        previous: str | None = None
        for k in range(1, epochs + 1):
            name = f"{candidate.name}@epoch{k}"
            settings = {**candidate.settings, "epochs": epochs, "checkpoint": k}
            out.append(
                Candidate(name=name, settings=settings, learn={**candidate.settings, "epochs": 1}, start_from=previous)
            )
            previous = name
    return out
