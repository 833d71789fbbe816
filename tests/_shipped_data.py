"""The data sets the tests need, shipped compressed in tests/data/ (tau-bench airline, the banking retrieval set),
unpacked into a folder laid out like `../shared/data`: `tau-bench/airline/...`, `retrieval-banking/...`.

Each `tests/data/<set>/*.tar.xz` unpacks into `<folder>/<set>/`; only regular files and folders with relative
names are taken (the archives are ours, but a tar member never writes outside the folder).
"""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath

__all__ = ["DATA", "unpack_shipped_data"]

DATA = Path(__file__).resolve().parent / "data"


def unpack_shipped_data(into: Path) -> Path:
    """Unpack every shipped archive under `into`; returns `into`."""
    archives = sorted(DATA.glob("*/*.tar.xz"))
    if not archives:
        raise FileNotFoundError(f"no data archives in {DATA}: the clone is incomplete (git checkout -- tests/data)")
    for archive in archives:
        target = into / archive.parent.name
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive, "r:xz") as tar:
            for member in tar.getmembers():
                name = PurePosixPath(member.name)
                if name.is_absolute() or ".." in name.parts:
                    raise ValueError(f"{archive}: member {member.name!r} leaves the folder")
                if member.isdir():
                    (target / name).mkdir(parents=True, exist_ok=True)
                elif member.isfile():
                    source = tar.extractfile(member)
                    assert source is not None
                    (target / name).parent.mkdir(parents=True, exist_ok=True)
                    (target / name).write_bytes(source.read())
    return into
