"""The `.embeddings.npz` vector cache beside a skillbook file: its writer, and its checked reader.

The cache is untrusted input like any file: its arrays' shapes and types are read from their `.npy` headers and
checked before anything is loaded, and vectors with NaN or infinite values are dropped (they are recomputed).
"""

from __future__ import annotations

import math
import os
import warnings
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from ace.core.skill import Embedding
from ace.core.storage import Writer
from ace.exceptions import SkillbookFormatError

__all__ = [
    "Sidecar",
    "embeddings_writer",
    "load_npz_arrays",
    "load_sidecar",
    "npz_headers",
    "read_embeddings",
    "sidecar_problem",
]

_MAX_DIM = 65_536
_MAX_ID_CHARS = 256
_MAX_MODEL_CHARS = 1_024
_NPZ_MEMBERS = frozenset({"ids.npy", "hashes.npy", "embeddings.npy", "model.npy"})


def embeddings_writer(*, ids: list[str], hashes: list[str], matrix: Embedding, model: str | None) -> Writer:
    """A writer of the vector cache: ids, the text fingerprint of each, one float32 matrix, the model name."""

    def write(f: IO[bytes]) -> None:
        # One entry per array, not per skill, and stored rather than deflated: float32 vectors shrink by
        # under 10% while deflate costs ~0.7 s at 5,000 x 384. It is still a standard `.npz` for `np.load`.
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
            for name, arr in (
                ("ids", np.asarray(ids, dtype=np.str_)),
                ("hashes", np.asarray(hashes, dtype=np.str_)),
                ("embeddings", np.ascontiguousarray(matrix, dtype=np.float32)),
                ("model", np.asarray(model or "", dtype=np.str_)),
            ):
                with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)

    return write


@dataclass(frozen=True)
class Sidecar:
    """A vector cache as stored: skill ids, the text fingerprint of each, their vectors and the model's name."""

    ids: tuple[str, ...]
    hashes: tuple[str, ...]
    matrix: np.ndarray[Any, np.dtype[Any]]
    model: str | None


def load_sidecar(path: str | os.PathLike[str], *, dim: int | None = None, max_rows: int | None = None) -> Sidecar:
    """The vector cache at `path`, its `.npy` headers checked before anything is loaded (`sidecar_problem`).

    Raises:
        SkillbookFormatError: the file is missing, damaged or suspicious; the message names the problem.
    """
    p = Path(path)
    found = _load_sidecar(p, dim=dim, max_rows=max_rows)
    if isinstance(found, str):
        raise SkillbookFormatError(f"{p}: {found}", path=str(p))
    return found


def _load_sidecar(p: Path, *, dim: int | None, max_rows: int | None) -> Sidecar | str:
    """The cache, or what is wrong with it."""
    try:
        problem = sidecar_problem(p, dim=dim, max_rows=max_rows)
    except Exception as e:
        problem = f"not a readable .npz ({type(e).__name__}: {e})"
    if problem is not None:
        return problem
    try:
        with np.load(p, allow_pickle=False) as npz:
            ids, hashes, matrix, model = npz["ids"], npz["hashes"], npz["embeddings"], str(npz["model"]) or None
    except Exception as e:
        return f"cannot be loaded ({type(e).__name__}: {e})"
    return Sidecar(tuple(str(i) for i in ids), tuple(str(h) for h in hashes), matrix, model)


def read_embeddings(
    path: str | os.PathLike[str], *, model: str | None, dim: int | None, max_rows: int | None = None
) -> dict[str, tuple[str, Embedding]]:
    """The cached vectors by skill id, each with the fingerprint of the text it was computed from.

    A cache, never an error: a missing file, or one from another model or of another dimension than `dim`, yields
    `{}`; so does a damaged or suspicious one (its `.npy` headers announce other arrays than the cache's, more than
    `max_rows` vectors, absurd sizes, or sizes its members do not hold), with a warning. Vectors holding NaN or
    infinite values are dropped with a warning. What is not returned is recomputed when needed.
    """
    p = Path(path)
    if not p.is_file():
        return {}
    found = _load_sidecar(p, dim=dim, max_rows=max_rows)
    if isinstance(found, str):
        _ignored(p, found)
        return {}
    ids, hashes, matrix = found.ids, found.hashes, found.matrix
    if (
        found.model != model
        or matrix.dtype != np.float32
        or matrix.ndim != 2
        or (dim is not None and matrix.shape[1] != dim)
        or not (len(ids) == len(hashes) == matrix.shape[0])
    ):
        return {}
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = [i for i, ok in zip(ids, finite, strict=True) if not ok]
        _ignored(p, f"vectors of {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} hold NaN or infinite values")
    return {i: (h, matrix[k]) for k, (i, h) in enumerate(zip(ids, hashes, strict=True)) if finite[k]}


def _ignored(path: Path, problem: str) -> None:
    warnings.warn(
        f"{path}: {problem}; ignored (it is a cache: the vectors are recomputed when needed, and the next save "
        "rewrites it)",
        RuntimeWarning,
        stacklevel=4,
    )


def npz_headers(path: Path, members_allowed: frozenset[str]) -> dict[str, tuple[tuple[int, ...], np.dtype[Any]]] | str:
    """Each member's (shape, dtype) from its `.npy` header (name without `.npy`), checked against the member's
    size, or what is wrong: other members than `members_allowed`, an unknown `.npy` version, Python objects."""
    with zipfile.ZipFile(path) as zf:
        members = {info.filename: info for info in zf.infolist()}
        if set(members) != members_allowed:
            return f"holds {sorted(members)}, not {sorted(members_allowed)}"
        headers: dict[str, tuple[tuple[int, ...], np.dtype[Any]]] = {}
        for name, info in members.items():
            with zf.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                else:
                    return f"{name}: unsupported .npy version {version}"
                data_start = member.tell()
            if dtype.hasobject:
                return f"{name}: holds Python objects"
            if info.file_size != data_start + math.prod(shape) * dtype.itemsize:
                return f"{name}: its header announces {shape} of {dtype} but it holds {info.file_size} bytes"
            headers[name[:-4]] = (shape, dtype)
    return headers


def load_npz_arrays(path: Path, names: Iterable[str]) -> dict[str, np.ndarray[Any, np.dtype[Any]]]:
    """The named arrays of an `.npz` (no pickles); check its `npz_headers` first."""
    with np.load(path, allow_pickle=False) as npz:
        return {name: npz[name] for name in names}


def sidecar_problem(path: Path, *, dim: int | None, max_rows: int | None) -> str | None:
    """What is wrong with a vector cache, judged from its members' `.npy` headers alone; `None`: fine to load."""
    headers = npz_headers(path, _NPZ_MEMBERS)
    if isinstance(headers, str):
        return headers
    (ids, ids_type), (hashes, hashes_type) = headers["ids"], headers["hashes"]
    (matrix, matrix_type), (model, model_type) = headers["embeddings"], headers["model"]
    text = {
        "ids": (ids_type, _MAX_ID_CHARS),
        "hashes": (hashes_type, _MAX_ID_CHARS),
        "model": (model_type, _MAX_MODEL_CHARS),
    }
    for name, (dtype, longest) in text.items():
        if dtype.kind != "U" or dtype.itemsize > 4 * longest:
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
