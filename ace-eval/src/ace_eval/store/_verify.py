"""`verify`: every file of every version against its recorded SHA-256, plus the pointer, the lineage and stray
files, each problem naming its file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ace.integrations.store_format import (
    CURRENT_FILE,
    VERSION_FILE,
    StoreFormatError,
    read_current,
    version_folder,
)
from ace_eval.store._model import StoreProblem, read_version_record
from ace_eval.store._write import file_sha256

__all__ = ["verify_store"]


def verify_store(root: Path, numbers: Sequence[int], *, pointer: bool = True) -> list[StoreProblem]:
    """The problems of versions `numbers` of the store at `root` (and of `current` when `pointer`)."""
    problems: list[StoreProblem] = []
    known = set(numbers)
    if pointer:
        try:
            read_current(root)
        except StoreFormatError as e:
            problems.append(StoreProblem(root / CURRENT_FILE, str(e)))
    for number in numbers:
        folder = version_folder(root, number)
        try:
            record = read_version_record(folder, number)
        except StoreFormatError as e:
            problems.append(StoreProblem(folder / VERSION_FILE, str(e)))
            continue
        if record.parent is not None and pointer and record.parent not in known:
            problems.append(StoreProblem(folder / VERSION_FILE, f"its parent, version {record.parent}, is missing"))
        for name, expected in record.files.items():
            path = folder / name
            if "/" in name or "\\" in name or name in ("", ".", "..", VERSION_FILE):
                problems.append(StoreProblem(folder / VERSION_FILE, f"lists a file name it may not: {name!r}"))
                continue
            try:
                actual = file_sha256(path)
            except FileNotFoundError:
                problems.append(StoreProblem(path, "missing (version.json lists it)"))
                continue
            except OSError as e:
                problems.append(StoreProblem(path, f"cannot be read: {e.strerror}"))
                continue
            if actual != expected:
                problems.append(
                    StoreProblem(path, f"SHA-256 {actual[:12]}... differs from the recorded {expected[:12]}...")
                )
        for entry in sorted(os.listdir(folder)):
            if entry != VERSION_FILE and entry not in record.files:
                problems.append(StoreProblem(folder / entry, "not part of the version (version.json does not list it)"))
    return problems
