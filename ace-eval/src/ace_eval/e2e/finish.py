"""Helpers of the e2e runner: the embedder of a model string, the benchmark's tasks, and letting go of the run's
span file. (The final skillbook files are the pipeline's `export_markdown` and `persist` steps.)"""

from __future__ import annotations

from collections.abc import Sequence

from ace.embeddings.base import Embedder, EmbeddingError
from ace.embeddings.litellm import LiteLLMEmbedder
from ace.embeddings.minilm import MINILM_MODEL_NAME, default_embedder
from ace.observability import Observability
from ace_eval.benchmarks.tau_bench import AirlineData
from ace_eval.e2e.collection import Trace
from ace_eval.e2e.config import DEFAULT_MODEL, ConfigError, E2ESettings

__all__ = ["LOCAL_EMBEDDING_NAMES", "embedder_for", "release_observability", "select_tasks"]

LOCAL_EMBEDDING_NAMES = frozenset({DEFAULT_MODEL, "default", "minilm", MINILM_MODEL_NAME.lower()})
"""Embedding model strings that name the embedded offline MiniLM."""


def embedder_for(model: str) -> Embedder:
    """The embedder of a model string: `local` (MiniLM, offline) or any litellm embedding model."""
    name = model.strip()
    if name.lower() in LOCAL_EMBEDDING_NAMES:
        return default_embedder()
    try:
        return LiteLLMEmbedder(model=name)
    except EmbeddingError as e:
        raise ConfigError(f"embedding model {name!r} (ACE_EMBEDDING_MODEL / --embedding-model): {e}") from None


def select_tasks(settings: E2ESettings, data: AirlineData, traces: Sequence[Trace] | None) -> list[int]:
    """The benchmark tasks a phase runs: the first `--limit` tasks, or the tasks of the replayed traces.

    Raises `ConfigError` when the traces are not tau-bench airline tasks of this data folder.
    """
    if settings.traces is None or traces is None:
        count = len(data.tasks) if settings.limit is None else min(settings.limit, len(data.tasks))
        return list(range(count))
    ids: set[int] = set()
    for trace in traces:
        task = trace.task_id
        if task is None or not task.isdigit() or int(task) >= len(data.tasks):
            raise ConfigError(
                f"trace {trace.trace_uid!r} has task_id {task!r}, which is not a task of the tau-bench airline data "
                f"(0-{len(data.tasks) - 1}): the agent cannot be evaluated on these traces; pass --no-benchmark"
            )
        ids.add(int(task))
    return sorted(ids)


def release_observability(obs: Observability) -> None:
    """Stop writing spans to the run's file (a later run in the same process gets its own) and turn the
    pydantic-ai instrumentation off again."""
    if not obs.enabled and obs.local_spans_path is None:
        return
    import logfire
    from pydantic_ai import Agent

    logfire.configure(send_to_logfire=False, console=False, inspect_arguments=False)
    if obs.enabled:
        Agent.instrument_all(False)
