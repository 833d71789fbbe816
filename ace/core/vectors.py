"""The `.embeddings.npz` vector cache beside a skillbook file: its writer, and its checked reader.

The cache is untrusted input like any file: its arrays' shapes and types are read from their `.npy` headers and
checked before anything is loaded, and vectors with NaN or infinite values are dropped (they are recomputed).
The matrix is mapped from the file, not read (`ace.core.npz`): the skills' vectors are read-only rows of it, and
its pages count in the process's memory only while something (a save, duplicate detection) reads them.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ace.core.npz import (
    Member,
    Streamed,
    drop_resident,
    npz_members,
    npz_writer,
    read_arrays,
    rows_in_chunks,
    text_array,
    text_list,
)
from ace.core.skill import Embedding
from ace.core.storage import Writer
from ace.exceptions import SkillbookFormatError

__all__ = [
    "CachedVectors",
    "Sidecar",
    "embeddings_writer",
    "load_sidecar",
    "read_embeddings",
    "sidecar_problem",
]

_MAX_DIM = 65_536
_MAX_ID_CHARS = 256
_MAX_MODEL_CHARS = 1_024
_NPZ_MEMBERS = frozenset({"ids.npy", "hashes.npy", "embeddings.npy", "model.npy"})


def embeddings_writer(
    *, ids: list[str], hashes: list[str], matrix: Embedding | Sequence[Embedding], model: str | None
) -> Writer:
    """A writer of the vector cache: ids, the text fingerprint of each, one float32 matrix, the model name.

    `matrix` may be the skills' vectors themselves (rows of one length): they are written in chunks, never stacked
    into one more full copy.
    """
    if isinstance(matrix, np.ndarray):
        vectors: Any = np.ascontiguousarray(matrix, dtype=np.float32)
    else:
        width = int(np.asarray(matrix[0]).shape[0]) if len(matrix) else 0
        rows = (np.asarray(row, dtype=np.float32) for row in matrix)
        vectors = Streamed((len(matrix), width), np.dtype(np.float32), rows_in_chunks(rows))
    # One entry per array, not per skill, and stored rather than deflated: float32 vectors shrink by under 10%
    # while deflate costs ~0.7 s at 5,000 x 384. It is still a standard `.npz` for `np.load`.
    return npz_writer(
        {
            "ids": text_array(ids),  # ASCII: one byte a character
            "hashes": text_array(hashes),
            "embeddings": vectors,
            "model": np.asarray(model or "", dtype=np.str_),
        }
    )


@dataclass(frozen=True)
class Sidecar:
    """A vector cache as stored: skill ids, the text fingerprint of each, their vectors and the model's name."""

    ids: tuple[str, ...]
    hashes: tuple[str, ...]
    matrix: np.ndarray[Any, np.dtype[Any]]
    model: str | None


@dataclass(frozen=True)
class CachedVectors:
    """The usable vectors of a cache: for each skill id, its text fingerprint and its row of one (mapped) matrix."""

    rows: dict[str, int]
    hashes: list[str]
    matrix: Embedding

    def get(self, skill_id: str) -> tuple[str, Embedding] | None:
        """(fingerprint, read-only vector) of `skill_id`, or `None`."""
        row = self.rows.get(skill_id)
        return None if row is None else (self.hashes[row], self.matrix[row])

    def __len__(self) -> int:
        return len(self.rows)


def load_sidecar(path: str | os.PathLike[str], *, dim: int | None = None, max_rows: int | None = None) -> Sidecar:
    """The vector cache at `path`, its `.npy` headers checked before anything is loaded (`sidecar_problem`).

    Raises:
        SkillbookFormatError: the file is missing, damaged or suspicious; the message names the problem.
    """
    p = Path(path)
    found = _load(p, dim=dim, max_rows=max_rows)
    if isinstance(found, str):
        raise SkillbookFormatError(f"{p}: {found}", path=str(p))
    arrays = found[0]
    ids, hashes = (tuple(text_list(arrays[k])) for k in ("ids", "hashes"))
    return Sidecar(ids, hashes, arrays["embeddings"], str(arrays["model"]) or None)


_Loaded = tuple[dict[str, np.ndarray[Any, np.dtype[Any]]], np.ndarray[Any, np.dtype[np.bool_]]]


def _load(p: Path, *, dim: int | None, max_rows: int | None, map_min_bytes: int | None = None) -> _Loaded | str:
    """The cache's arrays and which vectors are finite, or what is wrong with it."""
    try:
        members = npz_members(p, _NPZ_MEMBERS)
        problem = members if isinstance(members, str) else sidecar_problem(members, dim=dim, max_rows=max_rows)
    except Exception as e:
        problem = f"not a readable .npz ({type(e).__name__}: {e})"
    if problem is not None:
        return problem
    assert not isinstance(members, str)
    try:
        found = read_arrays(p, members, members, finite=["embeddings"], map_min_bytes=map_min_bytes)
    except Exception as e:
        return f"cannot be loaded ({type(e).__name__}: {e})"
    if isinstance(found, str):
        return found
    return found.arrays, found.finite["embeddings"]


def read_embeddings(
    path: str | os.PathLike[str],
    *,
    model: str | None,
    dim: int | None,
    max_rows: int | None = None,
    map_min_bytes: int | None = None,
) -> CachedVectors | None:
    """The cached vectors by skill id, each with the fingerprint of the text it was computed from.

    A cache, never an error: a missing file, or one from another model or of another dimension than `dim`, yields
    `None`; so does a damaged or suspicious one (its `.npy` headers announce other arrays than the cache's, more
    than `max_rows` vectors, absurd sizes, or sizes its members do not hold; a wrong CRC), with a warning. Vectors
    holding NaN or infinite values are dropped with a warning. What is not returned is recomputed when needed.
    Files from `map_min_bytes` on (default `ace.core.npz.MAP_MIN_BYTES`) are mapped, not read.
    """
    p = Path(path)
    if not p.is_file():
        return None
    found = _load(p, dim=dim, max_rows=max_rows, map_min_bytes=map_min_bytes)
    if isinstance(found, str):
        _ignored(p, found)
        return None
    arrays, finite = found
    if (str(arrays["model"]) or None) != model:
        return None
    ids, hashes = text_list(arrays["ids"]), text_list(arrays["hashes"])
    for name in ("ids", "hashes"):
        drop_resident(arrays[name])  # read once: their pages need not stay
    if not finite.all():
        bad = [i for i, ok in zip(ids, finite.tolist(), strict=True) if not ok]
        _ignored(p, f"vectors of {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} hold NaN or infinite values")
    rows = {sid: k for k, (sid, ok) in enumerate(zip(ids, finite.tolist(), strict=True)) if ok}
    return CachedVectors(rows, hashes, arrays["embeddings"])


def _ignored(path: Path, problem: str) -> None:
    warnings.warn(
        f"{path}: {problem}; ignored (it is a cache: the vectors are recomputed when needed, and the next save "
        "rewrites it)",
        RuntimeWarning,
        stacklevel=4,
    )


def sidecar_problem(members: dict[str, Member], *, dim: int | None, max_rows: int | None) -> str | None:
    """What is wrong with a vector cache, judged from its members' `.npy` headers alone; `None`: fine to load."""
    ids, ids_type = members["ids"].shape, members["ids"].dtype
    hashes, hashes_type = members["hashes"].shape, members["hashes"].dtype
    matrix, matrix_type = members["embeddings"].shape, members["embeddings"].dtype
    model, model_type = members["model"].shape, members["model"].dtype
    text = {
        "ids": (ids_type, _MAX_ID_CHARS),
        "hashes": (hashes_type, _MAX_ID_CHARS),
        "model": (model_type, _MAX_MODEL_CHARS),
    }
    for name, (dtype, longest) in text.items():
        if dtype.kind not in "US" or dtype.itemsize > (4 if dtype.kind == "U" else 1) * longest:
            return f"{name}: {dtype} is not text of at most {longest} characters"
    if len(ids) != 1 or hashes != ids or model != ():
        return f"ids {ids}, hashes {hashes} and model {model} do not fit together"
    if matrix_type != np.dtype(np.float32) or len(matrix) != 2 or matrix[0] != ids[0]:
        return f"embeddings are {matrix} of {matrix_type}, not {ids[0]} float32 vectors"
    rows, width = matrix
    if not 0 < width <= _MAX_DIM or (dim is not None and width != dim):
        return f"vectors of dimension {width}, expected {dim if dim is not None else f'1 to {_MAX_DIM}'}"
    if max_rows is not None and rows > max_rows:
        return f"{rows} vectors for a skillbook of {max_rows} skills"
    return None
