"""Model-layer timings: litellm import, and the embedded model (load, tokens/s, time to first valid tool call).

Run: `.venv/bin/python benchmarks/llm_models.py [--repeat 3]`. Prints one table; the machine's load average is printed
too, because llama.cpp slows down sharply when other processes hold the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from ace.llm import LocalModel

ADD = ToolDefinition(
    name="add",
    description="Add two integers.",
    parameters_json_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)
IMPORT_LITELLM = "import time; from ace.llm import import_litellm; t = time.perf_counter(); import_litellm(); " + (
    "print(time.perf_counter() - t)"
)


def litellm_import_seconds() -> float:
    """Import time of litellm in a fresh interpreter (the package itself already imported)."""
    done = subprocess.run([sys.executable, "-c", IMPORT_LITELLM], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


async def first_tool_call(model: LocalModel) -> ModelResponse:
    agent = Agent(model, output_type=int, instructions="Add the numbers with the add tool.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async with agent.iter("What is 2 plus 3?") as run:
        async for node in run:
            if Agent.is_call_tools_node(node):
                return node.model_response
    raise RuntimeError("no model response")


async def step(model: LocalModel, params: ModelRequestParameters, prompt: str) -> ModelResponse:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    return await model.request([ModelRequest(parts=[UserPromptPart(prompt)])], {"max_tokens": 200}, params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []

    imports = [litellm_import_seconds() for _ in range(args.repeat)]
    rows.append(("litellm import (fresh process), median", f"{statistics.median(imports):.2f} s"))

    model = LocalModel()
    first_start = time.perf_counter()
    rows.append(("local model load (GGUF -> llama.cpp)", f"{timed(model.load):.2f} s"))
    response = asyncio.run(first_tool_call(model))
    first = time.perf_counter() - first_start
    valid = isinstance(response.parts[0], ToolCallPart)
    rows.append(("time to first valid tool call (incl. load)", f"{first:.2f} s ({'valid' if valid else 'INVALID'})"))

    tool_params = ModelRequestParameters(function_tools=[ADD], allow_text_output=False)
    text_params = ModelRequestParameters(allow_text_output=True)
    steps: list[float] = []
    grammar_rates: list[float] = []
    text_rates: list[float] = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        out = asyncio.run(step(model, tool_params, "What is 2 plus 3?"))
        seconds = time.perf_counter() - start
        steps.append(seconds)
        grammar_rates.append(out.usage.output_tokens / seconds)
        start = time.perf_counter()
        out = asyncio.run(step(model, text_params, "Write a short story about a lighthouse keeper."))
        text_rates.append(out.usage.output_tokens / (time.perf_counter() - start))
    rows.append(("tool-call step (warm, grammar), median", f"{statistics.median(steps):.2f} s"))
    rows.append(("tokens/s, grammar-constrained tool call", f"{statistics.median(grammar_rates):.0f}"))
    rows.append(("tokens/s, free text (200 tokens)", f"{statistics.median(text_rates):.0f}"))
    load = os.getloadavg()
    rows.append(("cpu count / load average (1 min)", f"{os.cpu_count()} / {load[0]:.1f}"))

    width = max(len(name) for name, _ in rows)
    print(f"{'measure'.ljust(width)} | value")
    print(f"{'-' * width}-|-{'-' * 24}")
    for name, value in rows:
        print(f"{name.ljust(width)} | {value}")


if __name__ == "__main__":
    main()
