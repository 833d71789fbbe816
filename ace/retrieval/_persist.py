"""The search index sidecar: `skillbook.index.npz` beside `skillbook.json`, so a loaded skillbook searches at once.

Written with the skillbook (`Skillbook.save_to_file`, all files or none), read at the first search after a load.
It is a cache, checked like the vector cache: the `.npy` headers of its members are read first and must announce
exactly the arrays and sizes its header names; the header must name the SHA-256 of the skillbook file as loaded,
the embedding model and dimension. A stale sidecar (the skillbook changed since) is ignored silently and a damaged
one with a warning; either way the index is rebuilt from the skills, and the next save rewrites the sidecar.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from ace.core.npz import Streamed, npz_members, npz_writer, read_arrays
from ace.core.skillbook import Skillbook
from ace.core.storage import Writer, sidecar_path
from ace.core.vectors import read_embeddings
from ace.retrieval._slots import TextColumn

__all__ = [
    "INDEX_FORMAT",
    "RowsFrom",
    "cache_rows",
    "cached_rows",
    "graph_reader",
    "index_path",
    "index_writer",
    "read_index",
]

INDEX_FORMAT = 1
_Arrays = dict[str, npt.NDArray[Any]]
# Every member: dtype kind and its shape in terms of the header's sizes
# (n slots, p postings, v vocabulary, m main postings, k keywords, w keyword links, r pending, d dimension).
_LAYOUT: dict[str, tuple[str, tuple[str, ...]]] = {
    "header": ("U", ()),
    "slot_ids": ("U", ("n",)),
    "slot_hashes": ("U", ("n",)),
    "sections": ("i1", ("n",)),
    "tie_keys": ("i8", ("n",)),
    "kw_vocab": ("U", ("k",)),
    "kw_ptr": ("i8", ("n+1",)),
    "kw_ids": ("i4", ("w",)),
    "pending": ("U", ("r",)),
    "bm25_vocab": ("U", ("v",)),
    "bm25_params": ("f8", ("4",)),
    "bm25_terms": ("i4", ("p",)),
    "bm25_tfs": ("f4", ("p",)),
    "bm25_doc_off": ("i8", ("n",)),
    "bm25_doc_n": ("i4", ("n",)),
    "bm25_doc_len": ("f8", ("n",)),
    "bm25_alive": ("b1", ("n",)),
    "bm25_df": ("i8", ("v",)),
    "bm25_main_ptr": ("i8", ("v+1",)),
    "bm25_main_slots": ("i4", ("m",)),
    "bm25_main_tfs": ("f4", ("m",)),
}
_DENSE = {"vectors": ("f4", ("n", "d")), "vector_rows": ("i8", ("n",)), "hnsw": ("u1", ("h",))}
_NORMS = {"vector_norms": ("f4", ("n",))}
"""The dense rows: `vectors` themselves, or `vector_rows` and `vector_norms` (the row of `.embeddings.npz` holding
each slot's vector, -1 for none, and the norm its unit row is that vector divided by: the vectors stored once), or
an HNSW graph."""
_CODES = {"codes": ("i1", ("n", "d")), "code_scales": ("f4", ("n",)), "code_errors": ("f4", ("n",))}
"""The int8 codes of the vectors, beside `vectors` from 16,384 skills (`ace.retrieval._quantised`)."""
_LISTS = {"list_of": ("i4", ("n",)), "list_centroids": ("f4", ("c", "d")), "list_radii": ("f4", ("c",))}
"""The k-means lists of the codes (`ace.retrieval._lists`), beside them: clustering again would cost ~1 s at 100,000."""
_MAX_TEXT = 1024
_BLOCK = 4096
"""Rows compared at a time when a save checks that the index's rows are the vector cache's (`cache_rows`)."""
RowsFrom = tuple[Path, os.stat_result] | None
"""The file a mapped matrix of dense rows was read from, and its `os.stat` then (for `ace.core.npz.RowReader`)."""


def index_path(skillbook_path: str | Path) -> Path:
    """`skillbook.json` -> `skillbook.index.npz` (same folder, same stem)."""
    p = Path(skillbook_path)
    return p.with_name(f"{p.stem}.index.npz")


def index_writer(header: dict[str, Any], arrays: Mapping[str, npt.NDArray[Any] | Streamed]) -> Writer:
    """A writer of the sidecar: the JSON `header` and the arrays, stored uncompressed and aligned (`ace.core.npz`),
    so a later process maps them instead of reading them. The header gets the `sizes` of `_LAYOUT` from them."""
    ref = {"n": "slot_ids", "p": "bm25_terms", "v": "bm25_vocab", "m": "bm25_main_slots", "k": "kw_vocab"}
    ref["c"] = "list_centroids"
    sizes = {
        key: arrays[name].shape[0]
        for key, name in {**ref, "w": "kw_ids", "r": "pending", "h": "hnsw"}.items()
        if name in arrays
    }
    header = {**header, "sizes": {"h": 0, **sizes, "d": header["dim"]}}
    return npz_writer({"header": np.asarray(json.dumps(header, sort_keys=True), dtype=np.str_), **arrays})


def read_index(path: Path, *, digest: str, model: str, dim: int) -> tuple[dict[str, Any], _Arrays] | None:
    """The sidecar's header and arrays if it belongs to the skillbook file of SHA-256 `digest`; else `None`.

    The arrays are mapped from the file when it is large enough (copy-on-write: the index changes them in place);
    the HNSW graph (`hnsw`) is among them only then, else faiss streams it from the file (`graph_reader`).
    """
    if not path.is_file():
        return None
    try:
        found = _read(path, digest=digest, model=model, dim=dim)
    except Exception as e:
        found = f"not a readable index ({type(e).__name__}: {e})"
    if isinstance(found, str):
        if found:  # "" means stale: expected after any change, not worth a warning
            warnings.warn(
                f"{path}: {found}; ignored (a cache: the search index is rebuilt and the next save rewrites it)",
                RuntimeWarning,
                stacklevel=3,
            )
        return None
    return found


def _read(path: Path, *, digest: str, model: str, dim: int) -> tuple[dict[str, Any], _Arrays] | str:
    with zipfile.ZipFile(path) as zf:
        names = {info.filename for info in zf.infolist()}
        dense = "hnsw" if "hnsw.npy" in names else "vectors" if "vectors.npy" in names else "vector_rows"
        with zf.open("header.npy") as member:
            header_shape, _, header_type = _npy_header(member)
            if header_type.kind != "U" or header_shape != () or header_type.itemsize > 4 * 4096:
                return "its header is not a short JSON text"
        with zf.open("header.npy") as member:
            header = json.loads(str(np.lib.format.read_array(member, allow_pickle=False)))
    if not isinstance(header, dict) or header.get("format") != INDEX_FORMAT:
        return f"format {header.get('format') if isinstance(header, dict) else '?'}, expected {INDEX_FORMAT}"
    if header.get("skillbook_sha256") != digest:
        return ""
    if header.get("model") != model or header.get("dim") != dim:
        return ""  # another embedder: the index is rebuilt for this one
    layout = {
        **_LAYOUT,
        dense: _DENSE[dense],
        **(_NORMS if dense == "vector_rows" else {}),
        **(_CODES if dense != "hnsw" and "codes.npy" in names else {}),
        **(_LISTS if dense != "hnsw" and "codes.npy" in names and "list_of.npy" in names else {}),
    }
    members = npz_members(path, frozenset(f"{name}.npy" for name in layout))
    if isinstance(members, str):
        return members
    sizes = header.get("sizes")
    if not isinstance(sizes, dict) or not all(isinstance(v, int) and v >= 0 for v in sizes.values()):
        return "its header has no sizes"
    for name, (kind, dims) in layout.items():
        shape, dtype = members[name].shape, members[name].dtype
        try:
            expected = tuple(_size(d, sizes) for d in dims)
        except KeyError as e:
            return f"its header lacks the size {e}"
        ok = _text_ok(dtype) if kind == "U" else dtype == np.dtype(kind)
        if not ok or shape != expected:
            return f"{name}: {shape} of {dtype}, expected {expected} of {kind}"
    names_read = [name for name in layout if name != "header"]
    stored = read_arrays(
        path,
        members,
        names_read,
        writable=True,
        finite=["vectors"] * (dense == "vectors"),
        only_mapped=["hnsw"],
    )
    if isinstance(stored, str):
        return stored
    if dense == "vectors" and not stored.finite["vectors"].all():
        return "vectors: some hold NaN or infinite values"
    header["graph"] = dense == "hnsw"
    return header, stored.arrays


@contextlib.contextmanager
def graph_reader(path: Path) -> Iterator[Callable[[int], bytes]]:
    """A `read(n)` over the bytes of the sidecar's `hnsw` member (its `.npy` header skipped), for faiss."""
    with zipfile.ZipFile(path) as zf, zf.open("hnsw.npy") as member:
        _npy_header(member)
        yield member.read


def _text_ok(dtype: np.dtype[Any]) -> bool:
    """A text member: `U`, or ASCII `S` (`ace.core.npz.text_array`), of at most `_MAX_TEXT` characters."""
    return (dtype.kind == "U" and dtype.itemsize <= 4 * _MAX_TEXT) or (
        dtype.kind == "S" and dtype.itemsize <= _MAX_TEXT
    )


def _size(dim: str, sizes: dict[str, int]) -> int:
    """A dimension of `_LAYOUT`: a number, a size's name, or a name plus one."""
    if dim.isdigit():
        return int(dim)
    return sizes[dim[:-2]] + 1 if dim.endswith("+1") else sizes[dim]


def _npy_header(member: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(member)
    return np.lib.format.read_array_header_2_0(member)


def cache_rows(
    skillbook: Skillbook,
    live: npt.NDArray[np.int64],
    live_ids: Sequence[str],
    n: int,
    rows_of: Callable[[npt.NDArray[np.int64], int], npt.NDArray[np.float32]],
) -> _Arrays | None:
    """`vector_rows` and `vector_norms` for a sidecar written with `skillbook`: for each of the `n` slots, the row of
    the `.embeddings.npz` written in the same save that holds its vector, -1 for a dead slot, and the norm that
    vector divided by is its unit row (`rows_of(slots, n)`) bit for bit; `None` when a live slot's row is not there
    or not so (the sidecar then stores `vectors`). Compared a block at a time."""
    embedded = [s for s in skillbook.skills(include_inactive=True) if s.embedding is not None]
    row_of = {s.id: k for k, s in enumerate(embedded)}
    rows = np.full(n, -1, dtype=np.int64)
    for slot, sid in zip(live.tolist(), live_ids, strict=True):
        k = row_of.get(sid)
        if k is None:
            return None
        rows[slot] = k
    vectors = [np.asarray(embedded[k].embedding, dtype=np.float32) for k in rows[live].tolist()]
    norms = np.ones(n, dtype=np.float32)
    norms[live] = [float(np.linalg.norm(v)) or 1.0 for v in vectors]  # as the index divided them (`_add`)
    for start in range(0, live.size, _BLOCK):
        part = live[start : start + _BLOCK]
        given = np.stack(vectors[start : start + _BLOCK]) / norms[part, None]
        if not (rows_of(part, n) == given).all():
            return None
    return {"vector_rows": rows, "vector_norms": norms}


def cached_rows(book_path: str, a: _Arrays, n: int, model: str, dim: int) -> tuple[_Arrays, RowsFrom] | None:
    """A sidecar's arrays with `vectors` from the rows of the vector cache its `vector_rows` names (the cache's
    matrix itself, mapped, when they are all of its rows in order), and where they were read from; `None` when the
    cache no longer holds them (deleted, rewritten, another model): the sidecar is stale."""
    cache = sidecar_path(book_path)
    try:
        seen = cache.stat()
    except OSError:
        return None
    cached = read_embeddings(cache, model=model, dim=dim)
    if cached is None:
        return None
    rows, alive = a["vector_rows"], a["bm25_alive"]
    live = np.flatnonzero(alive)
    ids, hashes = TextColumn(a["slot_ids"]).where(live), TextColumn(a["slot_hashes"]).where(live)
    for k, sid, digest in zip(rows[live].tolist(), ids, hashes, strict=True):
        if cached.rows.get(sid) != k or cached.hashes[k] != digest:
            return None
    if (rows[~alive] != -1).any():
        return None
    matrix, norms = np.asarray(cached.matrix), a["vector_norms"]
    if not (np.isfinite(norms) & (norms > 0)).all():
        return None
    if rows.size == matrix.shape[0] and (rows == np.arange(rows.size)).all():
        return {**a, "vectors": matrix}, (cache, seen)  # mapped, divided by `vector_norms` as rows are read
    vectors = np.zeros((n, dim), dtype=np.float32)
    vectors[live] = matrix[rows[live]] / norms[live, None]
    return {k: v for k, v in a.items() if k != "vector_norms"} | {"vectors": vectors}, None
