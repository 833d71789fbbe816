"""`configure_observability`: never sends without a token, instruments pydantic-ai, writes spans to local JSONL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import logfire
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import InsightSource, Skillbook
from ace.embeddings.test import TestEmbedder
from ace.observability import (
    JsonlSpanExporter,
    ObservabilityError,
    ace_span,
    configure_observability,
    find_logfire_target,
    read_spans_jsonl,
)
from ace.reflector.reflection import Reflection
from ace.skill_manager.manager import SkillManager

SECRET_ISSUE = "In tau-airline's send_certificate API, certificates are issued only to silver and gold members."


@pytest.fixture
def no_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No LOGFIRE_TOKEN, and a current folder without `.logfire/` credentials."""
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    monkeypatch.delenv("LOGFIRE_CREDENTIALS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)


def write_credentials(folder: Path, token: str = "pylf_v1_us_fromfile") -> Path:
    """What `logfire projects use` writes (`logfire auth` holds the user's login, this file the project's token)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "logfire_credentials.json"
    data = {
        "token": token,
        "project_name": "ace-runs",
        "project_url": "https://logfire-us.pydantic.dev/acme/ace-runs",
        "logfire_api_url": "https://logfire-us.pydantic.dev",
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def recorded_configure(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Replaces `logfire.configure` / `instrument_pydantic_ai` with recorders, so no exporter is ever built."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(logfire, "configure", lambda **kw: calls.append({"configure": kw}))
    monkeypatch.setattr(logfire, "instrument_pydantic_ai", lambda **kw: calls.append({"instrument": kw}))
    return calls


@pytest.fixture
def restore_instrumentation() -> Iterator[None]:
    yield
    Agent.instrument_all(False)
    logfire.configure(send_to_logfire=False, console=False, inspect_arguments=False)  # release the local file


def test_disabled_without_local_file_configures_nothing(recorded_configure: list[dict[str, Any]]) -> None:
    obs = configure_observability(False)
    assert (obs.enabled, obs.sending, obs.local_spans_path) == (False, False, None)
    assert recorded_configure == []
    obs.flush()  # nothing configured: a no-op


def test_send_to_logfire_true_without_token_is_refused(
    no_token: None, recorded_configure: list[dict[str, Any]]
) -> None:
    with pytest.raises(ObservabilityError, match="needs a Logfire write token: set LOGFIRE_TOKEN"):
        configure_observability(True, send_to_logfire=True)
    assert recorded_configure == []


def test_without_token_nothing_is_sent(no_token: None, recorded_configure: list[dict[str, Any]]) -> None:
    obs = configure_observability(True)
    assert obs.enabled and not obs.sending
    [configure, instrument] = recorded_configure
    assert configure["configure"]["send_to_logfire"] is False and configure["configure"]["token"] is None
    assert configure["configure"]["console"] is False
    assert instrument == {"instrument": {"include_content": False}}
    assert isinstance(configure["configure"]["scrubbing"], logfire.ScrubbingOptions)


def test_with_token_spans_are_sent_and_content_follows_the_opt_in(
    monkeypatch: pytest.MonkeyPatch, recorded_configure: list[dict[str, Any]]
) -> None:
    monkeypatch.setenv("LOGFIRE_TOKEN", "pylf_v1_test_token")
    obs = configure_observability(True, include_content=True)
    assert obs.sending and obs.include_content
    assert recorded_configure[0]["configure"]["send_to_logfire"] is True
    assert recorded_configure[0]["configure"]["token"] == "pylf_v1_test_token"
    assert recorded_configure[1] == {"instrument": {"include_content": True}}
    recorded_configure.clear()
    assert not configure_observability(True, send_to_logfire=False).sending
    assert recorded_configure[0]["configure"]["send_to_logfire"] is False


def scripted_sm() -> SkillManager:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = sum(isinstance(m, ModelResponse) for m in messages)
        if n == 0:
            return ModelResponse(parts=[ToolCallPart("search_skills", {"query": "certificate eligibility"})])
        if n == 1:
            args = {"section": "context", "issue": SECRET_ISSUE, "keywords": ["airline", "compensation"]}
            return ModelResponse(parts=[ToolCallPart("add_skill", {**args, "insight": "Check the tier first."})])
        return ModelResponse(parts=[TextPart("Added one skill.")])

    return SkillManager(FunctionModel(model), embedder=TestEmbedder())


def test_local_jsonl_holds_the_whole_session_tree(
    no_token: None, restore_instrumentation: None, tmp_path: Path
) -> None:
    path = tmp_path / "run" / "spans.jsonl"
    obs = configure_observability(True, local_spans_path=path)
    assert obs.enabled and not obs.sending and obs.local_spans_path == path
    source = InsightSource(trace_uid="tau-bench-airline:9", source_system="tau-bench-airline", trace_id="9", epoch=0)
    reflection = Reflection(
        error_identification="Issued a certificate to a regular member.",
        root_cause_analysis="Did not check the membership tier.",
        correct_approach="Check the tier before compensating.",
        key_insight="Compensation certificates depend on membership tier.",
    )
    scripted_sm().update_skills([reflection], Skillbook(), source=source)
    obs.flush()

    spans = read_spans_jsonl(path)
    by_id = {s["span_id"]: s for s in spans}
    [session] = [s for s in spans if s["name"] == "sm.session"]
    [add] = [s for s in spans if s["name"] == "add_skill"]
    assert session["attributes"]["ace.trace_uid"] == "tau-bench-airline:9" and session["status"] == "UNSET"
    assert add["attributes"]["ace.skill_id"] == "context-00001" and add["attributes"]["ace.result"] == "ok"
    assert add["trace_id"] == session["trace_id"] and session["parent_span_id"] is None
    parent = by_id[add["parent_span_id"]]
    assert parent["name"] == "execute_tool add_skill"  # pydantic-ai instrumentation is on
    while parent["parent_span_id"] is not None:
        parent = by_id[parent["parent_span_id"]]
    assert parent is session
    assert session["start_time"] <= add["start_time"] <= add["end_time"] <= session["end_time"]
    assert session["duration_ms"] >= add["duration_ms"] >= 0
    assert SECRET_ISSUE not in path.read_text(encoding="utf-8")  # no content without the opt-in


def test_jsonl_exporter_records_parents_errors_and_stops_after_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    exporter = JsonlSpanExporter(path)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with (
        tracer.start_as_current_span("outer", attributes={"ace.ids": ("a", "b")}),
        pytest.raises(KeyError),
        tracer.start_as_current_span("inner"),
    ):
        raise KeyError("boom")
    inner, outer = read_spans_jsonl(path)
    assert (inner["name"], outer["name"]) == ("inner", "outer")
    assert inner["parent_span_id"] == outer["span_id"] and inner["trace_id"] == outer["trace_id"]
    assert outer["attributes"] == {"ace.ids": ["a", "b"]}
    assert inner["status"] == "ERROR" and inner["events"][0]["name"] == "exception"

    with path.open("a", encoding="utf-8") as f:
        f.write('{"name": "torn')
    assert [s["name"] for s in read_spans_jsonl(path)] == ["inner", "outer"]
    provider.shutdown()
    assert exporter.export([]) is SpanExportResult.FAILURE


def test_ace_span_marks_unexpected_errors_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonlSpanExporter(path)))
    monkeypatch.setattr("ace.observability.trace.get_tracer_provider", lambda: provider)
    with pytest.raises(LookupError), ace_span("expected", {"ace.x": 1, "ace.none": None}, expected=(LookupError,)):
        raise LookupError("retry me")
    with pytest.raises(RuntimeError), ace_span("failed", {}):
        raise RuntimeError("real failure")
    provider.shutdown()
    expected, failed = read_spans_jsonl(path)
    assert expected["status"] == "UNSET" and expected["events"] == [] and expected["attributes"] == {"ace.x": 1}
    assert failed["status"] == "ERROR" and failed["status_description"] == "RuntimeError: real failure"


def test_ace_span_without_a_tracer_provider_is_the_no_op_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ace.observability.trace.get_tracer_provider", trace.ProxyTracerProvider)
    with ace_span("sm.session", {"ace.x": 1}) as span:
        assert span is trace.INVALID_SPAN and not span.is_recording()
        span.set_attribute("ace.y", 2)  # accepted and dropped
    with pytest.raises(RuntimeError, match="still raised"), ace_span("failed", {}):
        raise RuntimeError("still raised")


def test_session_word_is_not_scrubbed_but_secrets_still_are(
    no_token: None, restore_instrumentation: None, tmp_path: Path
) -> None:
    path = tmp_path / "spans.jsonl"
    obs = configure_observability(False, local_spans_path=path, include_content=True)
    assert not obs.enabled and obs.local_spans_path == path
    with ace_span("sm.session", {"ace.prompt": "Earlier calls of this session were compacted."}):
        pass
    with ace_span("sm.session", {"ace.prompt": "Pay with the credit card ending 7447."}):
        pass
    with ace_span("sm.session", {"ace.prompt": "This session pasted the password hunter2."}):
        pass
    obs.flush()
    kept, card, scrubbed = (s["attributes"]["ace.prompt"] for s in read_spans_jsonl(path))
    assert kept == "Earlier calls of this session were compacted."
    assert card == "Pay with the credit card ending 7447."
    assert "hunter2" not in scrubbed and scrubbed.startswith("[Scrubbed")


def test_logfire_credentials_folder_is_honoured(
    no_token: None, tmp_path: Path, recorded_configure: list[dict[str, Any]]
) -> None:
    path = write_credentials(tmp_path / ".logfire")
    obs = configure_observability(True, local_spans_path=tmp_path / "spans.jsonl")
    assert obs.sending and obs.target is not None
    assert obs.target.source == ".logfire/logfire_credentials.json" and Path(obs.target.source).resolve() == path
    [configure, _] = recorded_configure
    assert configure["configure"]["send_to_logfire"] is True
    assert configure["configure"]["token"] == "pylf_v1_us_fromfile"
    assert configure["configure"]["console"] is False  # no project link / span lines printed into a progress bar
    assert obs.where() == (
        "Spans: sent to Logfire, https://logfire-us.pydantic.dev/acme/ace-runs (token from "
        f".logfire/logfire_credentials.json); a copy is in {tmp_path / 'spans.jsonl'}"
    )
    recorded_configure.clear()
    assert not configure_observability(True, send_to_logfire=False).sending  # an explicit "never" still wins
    assert recorded_configure[0]["configure"]["token"] is None


def test_token_precedence_and_the_credentials_dir_variable(
    no_token: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert find_logfire_target() is None
    write_credentials(tmp_path / "elsewhere", token="pylf_v1_us_elsewhere")
    monkeypatch.setenv("LOGFIRE_CREDENTIALS_DIR", str(tmp_path / "elsewhere"))
    target = find_logfire_target()
    assert target is not None and target.token == "pylf_v1_us_elsewhere" and target.project_url is not None
    monkeypatch.setenv("LOGFIRE_TOKEN", "pylf_v1_us_env")
    target = find_logfire_target()  # the variable wins over the file, as in logfire.configure; its project unknown
    assert target is not None and (target.token, target.source, target.project_url) == (
        "pylf_v1_us_env",
        "LOGFIRE_TOKEN",
        None,
    )
    target = find_logfire_target("pylf_v1_us_explicit")
    assert target is not None and (target.token, target.source) == ("pylf_v1_us_explicit", "token=")


def test_a_broken_credentials_file_is_named(no_token: None, tmp_path: Path) -> None:
    (tmp_path / ".logfire").mkdir()
    (tmp_path / ".logfire" / "logfire_credentials.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ObservabilityError, match=r"Invalid credentials file: .logfire/logfire_credentials.json: fix"):
        find_logfire_target()


def test_where_without_a_token(no_token: None, tmp_path: Path, recorded_configure: list[dict[str, Any]]) -> None:
    obs = configure_observability(True, local_spans_path=tmp_path / "spans.jsonl")
    assert obs.where() == (
        "Spans: not sent to Logfire (no token: set LOGFIRE_TOKEN, or run `logfire auth` and `logfire projects use` "
        f"in this folder to write .logfire/logfire_credentials.json); a copy is in {tmp_path / 'spans.jsonl'}"
    )
    local = configure_observability(False, local_spans_path=tmp_path / "spans.jsonl")
    assert local.where() == f"Spans: {tmp_path / 'spans.jsonl'} (local only)"
