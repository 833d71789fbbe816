"""Vectors for the search index: texts embedded in batches (read-only rows, handed to the skills).

In exact mode the index then hands each skill it indexes a row of its own storage to hold instead (`DenseStore`):
the very row it scores when dividing the vector by its norm changes no bit (its float32 norm is exactly 1: ~2/3 of
a normalising model's vectors), else a row of a block store of vectors as they are. Either way a skill's vector is
held once, in blocks, and no batch of the embedder's output stays alive for one row of it. In HNSW mode the graph
holds float16 codes: a skill keeps a view of its batch, as it came.
"""

from __future__ import annotations

from ace.embeddings.base import Embedder, EmbeddingError, EmbeddingMatrix, check_embeddings, l2_normalize

__all__ = ["embed_query", "embed_texts", "own_copy"]


def embed_query(embedder: Embedder, query: str) -> EmbeddingMatrix:
    """The query's unit vector; `EmbeddingError` when the embedder fails or returns garbage."""
    name = embedder.model_name
    try:
        raw = embedder.embed([query])
    except EmbeddingError:
        raise
    except Exception as e:
        raise EmbeddingError(f"could not embed the search query with {name!r}: {e}") from e
    vec = check_embeddings(raw, n_texts=1, dimension=embedder.dimension, model_name=name)
    unit: EmbeddingMatrix = l2_normalize(vec)[0]
    return unit


def embed_texts(embedder: Embedder, texts: list[str], batch_size: int) -> list[EmbeddingMatrix]:
    """The texts' vectors, embedded `batch_size` at a time, as read-only rows of each batch."""
    name, dim = embedder.model_name, embedder.dimension
    out: list[EmbeddingMatrix] = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        try:
            raw = embedder.embed(batch)
        except EmbeddingError:
            raise
        except Exception as e:
            raise EmbeddingError(f"could not embed {len(batch)} skill(s) with {name!r}: {e}") from e
        rows = check_embeddings(raw, n_texts=len(batch), dimension=dim, model_name=name).view()
        rows.flags.writeable = False  # a read-only view: the skills' vectors cannot be changed through it
        out.extend(rows)
    return out


def own_copy(vector: EmbeddingMatrix) -> EmbeddingMatrix:
    """A read-only compact copy of `vector` (not a view that keeps its whole batch alive)."""
    own = vector.copy()
    own.flags.writeable = False
    return own
