"""A pydantic-ai agent instrumented with Logfire, run on a `FunctionModel`, its spans written as OTLP JSON lines.

`logfire_to_file` uses the exporter ACE ships (`ace.integrations.otel`); the one here (`OtlpJsonLinesExporter`)
can also write base64 ids. Both encode with OpenTelemetry's own OTLP encoder and protobuf's JSON mapping, one
export request per line as the Collector's file exporter writes them; `hex_ids` writes the ids in hex as the OTLP
JSON specification says (protobuf's mapping gives base64). Nothing leaves the machine.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import logfire
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.integrations.otel import span_file_processor

CITIES = {"Paris": "sunny, 21C", "Oslo": "snow, -3C", "Lima": "fog, 17C"}


class OtlpJsonLinesExporter(SpanExporter):
    """Writes each export as one line of OTLP JSON."""

    def __init__(self, path: Path, *, hex_ids: bool) -> None:
        self.path = path
        self.hex_ids = hex_ids

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        document = MessageToDict(encode_spans(spans))
        if self.hex_ids:
            for resource in document["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                span[key] = base64.b64decode(span[key]).hex()
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(document) + "\n")
        return SpanExportResult.SUCCESS


def weather_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls `get_weather` for the city in the prompt (else its last word), then answers with the result."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"The weather: {last.content}.")])
    prompt = str(messages[0].parts[-1].content)
    city = next((c for c in CITIES if c in prompt), prompt.rstrip("?").split()[-1])
    return ModelResponse(parts=[ToolCallPart("get_weather", {"city": city}, tool_call_id=f"call-{city}")])


def weather_agent(**kwargs: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(weather_model), instructions="You answer weather questions.", name="weather", **kwargs
    )

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        if city not in CITIES:
            raise ValueError(f"unknown city {city}")
        return CITIES[city]

    return agent


def record_agent_runs(path: Path, prompts: Sequence[str], *, hex_ids: bool = True) -> Path:
    """Run the weather agent once per prompt with Logfire instrumentation; the spans go to `path`."""
    path.write_text("", encoding="utf-8")
    instance = logfire.configure(
        local=True,
        send_to_logfire=False,
        console=False,
        additional_span_processors=[SimpleSpanProcessor(OtlpJsonLinesExporter(path, hex_ids=hex_ids))],
        scrubbing=False,
    )
    agent = weather_agent()
    instance.instrument_pydantic_ai(agent)
    for prompt in prompts:
        agent.run_sync(prompt)
    instance.force_flush()
    return path


def refund_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks for a refund of the order named in the prompt (its last word), then reports the tool's answer."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"Done: {last.content}.")])
    order = str(messages[0].parts[-1].content).rstrip("?.").split()[-1]
    return ModelResponse(parts=[ToolCallPart("issue_refund", {"order_id": order}, tool_call_id=f"call-{order}")])


def support_agent(model: FunctionModel | None = None, **kwargs: Any) -> Agent[None, str]:
    """A support agent whose `issue_refund` raises `ValueError` for an order it does not know (A999)."""
    agent: Agent[None, str] = Agent(
        model or FunctionModel(refund_model), instructions="You are a support agent.", name="support", **kwargs
    )

    @agent.tool_plain
    def issue_refund(order_id: str) -> str:
        """Refund an order."""
        if order_id != "A100":
            raise ValueError(f"no order {order_id}")
        return f"refunded {order_id}"

    return agent


def logfire_to_file(path: Path) -> logfire.Logfire:
    """A local Logfire instance whose spans go to `path` through ACE's own exporter (`ace.integrations.otel`,
    redacting), as a user would set it up; nothing is sent."""
    return logfire.configure(
        local=True,
        send_to_logfire=False,
        console=False,
        additional_span_processors=[span_file_processor(path)],
        scrubbing=False,
    )


def record_runs(path: Path, agent: Agent[None, str], prompts: Sequence[str]) -> list[BaseException | None]:
    """Run `agent` once per prompt with Logfire instrumentation, its spans appended to `path` as OTLP JSON lines;
    returns what each run raised (None when it finished)."""
    instance = logfire_to_file(path)
    instance.instrument_pydantic_ai(agent)
    raised: list[BaseException | None] = []
    for prompt in prompts:
        try:
            agent.run_sync(prompt)
            raised.append(None)
        except Exception as e:  # the run's error is what the test is about
            raised.append(e)
    instance.force_flush()
    return raised
