"""Benchmark episodes of an e2e run: run tau-bench airline tasks in parallel into a trace collection, metered.

Every finished episode is one fsynced line of the collection, so an interrupted phase resumes with the
episodes it is missing and redoes none. Each episode's token counts and cost per role go into its trace's
`metadata["usage"]`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from ace.core.skillbook import Skillbook
from ace.redaction import Redactor
from ace_eval.benchmarks.tau_bench import (
    SOURCE_SYSTEM,
    AirlineData,
    EpisodeConfig,
    episode_to_trace,
    gold_data_hash,
    pass_hat_ks,
    run_episode,
)
from ace_eval.e2e.collection import CollectionWriter, Trace
from ace_eval.e2e.progress import Progress
from ace_eval.e2e.redaction import redact_trace

__all__ = [
    "MeteredModel",
    "UsageMeter",
    "benchmark_summary",
    "episode_uid",
    "run_episodes",
    "sum_usage",
]


@dataclass(kw_only=True)
class UsageMeter:
    """Requests, tokens and cost (USD, `None` while no response was priced) added up over responses. Thread-safe."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, usage: RequestUsage) -> None:
        """Count one response."""
        cost = getattr(usage, "cost", None)
        with self._lock:
            self.requests += 1
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            if isinstance(cost, Decimal | int | float):
                self.cost_usd = (self.cost_usd or 0.0) + float(cost)

    def to_dict(self) -> dict[str, Any]:
        """`{requests, input_tokens, output_tokens, cost_usd}`."""
        with self._lock:
            return {
                "requests": self.requests,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_usd": self.cost_usd,
            }


class MeteredModel(WrapperModel):
    """A model that adds the usage of every response it returns to a `UsageMeter`."""

    def __init__(self, wrapped: Model, meter: UsageMeter) -> None:
        super().__init__(wrapped)
        self.meter = meter

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        self.meter.add(response.usage)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
        self.meter.add(stream.usage)


def sum_usage(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of several `UsageMeter.to_dict()`s (cost stays `None` when none was priced)."""
    out: dict[str, Any] = {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None}
    for item in items:
        for key in ("requests", "input_tokens", "output_tokens"):
            out[key] += int(item.get(key) or 0)
        cost = item.get("cost_usd")
        if cost is not None:
            out["cost_usd"] = (out["cost_usd"] or 0.0) + float(cost)
    return out


def episode_uid(task_id: int, trial: int) -> str:
    """The trace uid `episode_to_trace` gives an episode."""
    return f"{SOURCE_SYSTEM}:task-{task_id}-trial-{trial}"


async def run_episodes(
    data: AirlineData,
    jobs: Sequence[tuple[int, int]],
    *,
    writer: CollectionWriter,
    agent_model: Model,
    user_model: Model,
    skillbook: Skillbook | None,
    config: EpisodeConfig,
    max_workers: int,
    progress: Progress,
    redactor: Redactor | None = None,
) -> None:
    """Run every `(task_id, trial)` of `jobs` not yet in the writer's collection, `max_workers` at a time.

    With a `redactor` each trace is written redacted (the episode itself ran on the real data)."""
    todo = [(t, k) for t, k in jobs if episode_uid(t, k) not in writer]
    gold: dict[int, str] = {}
    gold_lock = asyncio.Lock()
    queue: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
    for job in todo:
        queue.put_nowait(job)

    async def gold_hash(task_id: int) -> str:
        async with gold_lock:
            if task_id not in gold:
                gold[task_id] = await asyncio.to_thread(gold_data_hash, data, data.task(task_id))
            return gold[task_id]

    async def one(task_id: int, trial: int) -> None:
        meters = {"agent": UsageMeter(), "user": UsageMeter()}
        result = await run_episode(
            data,
            task_id,
            agent_model=MeteredModel(agent_model, meters["agent"]),
            user_model=MeteredModel(user_model, meters["user"]),
            trial=trial,
            skillbook=skillbook,
            config=config,
            gt_data_hash=await gold_hash(task_id),
        )
        trace = episode_to_trace(result)
        usage = {role: meter.to_dict() for role, meter in meters.items()}
        trace = trace.model_copy(update={"metadata": {**trace.metadata, "usage": usage}})
        writer.append(redact_trace(trace, redactor)[0])
        status = "error" if result.error else f"reward {result.reward:g}"
        progress.advance(
            error=result.error is not None,
            line=f"{trace.trace_uid}  {status}  {result.steps} steps  ended {result.ended}"
            + (f"  {result.error}" if result.error else ""),
        )

    async def worker() -> None:
        while not queue.empty():
            task_id, trial = queue.get_nowait()
            await one(task_id, trial)

    await asyncio.gather(*(worker() for _ in range(min(max_workers, len(todo)))))


def benchmark_summary(traces: Sequence[Trace]) -> dict[str, Any]:
    """pass^k, mean reward, errors and usage per role of a phase's episodes (an errored episode scores 0)."""
    results = [(t.task_id, t.reward or 0.0) for t in traces]
    errors = sum(1 for t in traces if t.metadata.get("error"))
    usage: dict[str, list[Mapping[str, Any]]] = {}
    for t in traces:
        for role, item in (t.metadata.get("usage") or {}).items():
            usage.setdefault(role, []).append(item)
    return {
        "episodes": len(traces),
        "tasks": len({t.task_id for t in traces}),
        "errors": errors,
        "mean_reward": sum(r for _, r in results) / len(results) if results else None,
        "pass_hat_k": {str(k): v for k, v in pass_hat_ks(results).items()},
        "usage": {role: sum_usage(items) for role, items in usage.items()},
    }
