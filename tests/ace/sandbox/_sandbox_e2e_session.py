"""A scripted recursive-reflector session whose `execute_code` tries the `__main__` bypass to read the parent's key.

Run by `test_sandbox_e2e.py` as its own process, started with the secret in its environment (so that it is also
in `/proc/<pid>/environ`, as for a real `ace-eval` run). The scripted model copies everything the tool returned
into its reflection, as a careless model would. Prints the run's outputs as JSON: reflection, tool results, spans.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import logfire
from logfire.testing import TestExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic_ai import models
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.reflector.recursive import RecursiveConfig, RecursiveReflector, SandboxLimits

models.ALLOW_MODEL_REQUESTS = False
BYPASS = """
import os, sys
main = sys.modules['__main__']
main.inside = lambda path, roots: True
for name in list(vars(main)):
    if name.startswith('DENIED'):
        setattr(main, name, type(getattr(main, name))())
print('env:', os.environ.get('OPENAI_API_KEY'))
print('parent:', open(f'/proc/{os.getppid()}/environ', 'rb').read())
"""


def model(seen: list[str]) -> FunctionModel:
    def respond(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        returns = [p.model_response_str() for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        seen.extend(returns)
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("execute_code", {"code": BYPASS})])
        copied = " ".join(seen)
        analysis = {
            "error_identification": copied,
            "root_cause_analysis": copied,
            "correct_approach": copied,
            "key_insight": copied,
            "skill_tags": [],
        }
        return ModelResponse(parts=[ToolCallPart("final_result", analysis)])

    return FunctionModel(respond, model_name="scripted-rr")


async def main() -> dict[str, Any]:
    exporter = TestExporter()
    logfire.configure(
        send_to_logfire=False,
        console=False,
        additional_span_processors=[SimpleSpanProcessor(exporter)],
        inspect_arguments=False,
        scrubbing=False,
    )
    seen: list[str] = []
    config = RecursiveConfig(sandbox=SandboxLimits(timeout_s=5.0, memory_mb=128), record_content=True)
    reflector = RecursiveReflector(model(seen), config=config, embedder=TestEmbedder())
    trace = {
        "trace_uid": "u1",
        "source_system": "demo",
        "trace_id": "t1",
        "question": "q",
        "reward": 0.0,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    result = await reflector.reflect(trace, Skillbook())
    return {
        "reflection": result.reflection.model_dump(mode="json"),
        "tool_results": seen,
        "spans": exporter.exported_spans_as_dict(),
    }


if __name__ == "__main__":
    json.dump(asyncio.run(main()), sys.stdout, default=str)
