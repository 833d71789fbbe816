"""The Claude Code session importer: streamed assistant lines merged, tool results answered, refusals located."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ace.redaction import Redactor
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.collection import CollectionError, Trace
from ace_eval.collection.importers import import_claude_code, import_traces, sniff_format

SESSION = "6f1c2a3e-8d7b-4c1e-9f0a-1b2c3d4e5f60"


def _entry(kind: str, message: Any, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ana/shop",
        "sessionId": SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": "u",
        "timestamp": "2026-11-30T10:00:00.000Z",
        **extra,
    }


def _assistant(blocks: list[dict[str, Any]], message_id: str = "msg_01") -> dict[str, Any]:
    return _entry(
        "assistant",
        {"id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks},
        requestId="req_1",
    )


SESSION_LINES = [
    {"type": "summary", "summary": "Fix the failing cart test", "leafUuid": "x"},
    _entry("user", {"role": "user", "content": "<local-command-caveat>ignore</local-command-caveat>"}, isMeta=True),
    _entry("user", {"role": "user", "content": "The cart test fails, fix it"}),
    _assistant([{"type": "thinking", "thinking": "Let me run the tests", "signature": "s"}]),
    _assistant([{"type": "text", "text": "I'll run the tests first."}]),
    _assistant(
        [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "pytest tests/test_cart.py"}}]
    ),
    _entry(
        "user",
        {
            "role": "user",
            "content": [{"tool_use_id": "toolu_01", "type": "tool_result", "content": "1 failed", "is_error": True}],
        },
        toolUseResult={"stdout": "1 failed"},
    ),
    _entry("user", {"role": "user", "content": "sub-agent prompt"}, isSidechain=True),
    _assistant([{"type": "text", "text": "Fixed the rounding in cart.py."}], message_id="msg_02"),
]


def _write(tmp_path: Path, lines: list[Any], name: str = "session.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_a_session_is_one_trace(tmp_path: Path) -> None:
    path = _write(tmp_path, SESSION_LINES)
    assert sniff_format(path) == "claude-code"
    imported = import_traces("claude-code", path)
    (trace,) = imported.traces
    assert trace.trace_uid == f"claude-code:{SESSION}" and trace.question == "The cart test fails, fix it"
    assert trace.messages == [
        {"role": "user", "content": "The cart test fails, fix it"},
        {
            "role": "assistant",
            "content": "I'll run the tests first.",
            "tool_calls": [
                {
                    "id": "toolu_01",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command": "pytest tests/test_cart.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_01", "content": "[error] 1 failed"},
        {"role": "assistant", "content": "Fixed the rounding in cart.py."},
    ]
    assert trace.metadata["summary"] == "Fix the failing cart test" and trace.metadata["git_branch"] == "main"
    assert imported.models == {"agent": "claude-sonnet-4-5"}


def test_a_folder_of_sessions(tmp_path: Path) -> None:
    _write(tmp_path, SESSION_LINES, "a.jsonl")
    other = [{**line, "sessionId": "other"} if "sessionId" in line else line for line in SESSION_LINES]
    _write(tmp_path, other, "b.jsonl")
    assert [t.trace_id for t in import_claude_code(tmp_path).traces] == [SESSION, "other"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([SESSION_LINES[2], "{oops"], "session.jsonl, line 2, column 2: not valid JSON"),
        ([SESSION_LINES[2], ["a"]], "line 2: an entry is a JSON object, got list"),
        ([{**SESSION_LINES[2], "message": None}], "line 1: field 'message': missing or not an object"),
        ([{**SESSION_LINES[2], "message": {"role": "user", "content": 3}}], "line 1: field 'message.content'"),
        (
            [SESSION_LINES[2], SESSION_LINES[6]],
            "line 2: field 'message.content[0].tool_use_id': 'toolu_01' answers no earlier tool_use",
        ),
        ([SESSION_LINES[2], _assistant([{"type": "tool_use", "input": {}}])], "line 2: field 'message.content[0]'"),
        ([{**SESSION_LINES[2], "sessionId": 7}], "line 1: field 'sessionId': missing or not a string"),
        ([SESSION_LINES[0]], "no Claude Code session with a user message found"),
    ],
)
def test_malformed_sessions_are_refused_naming_line_and_field(tmp_path: Path, lines: list[Any], message: str) -> None:
    with pytest.raises(CollectionError) as info:
        import_claude_code(_write(tmp_path, lines))
    assert message in str(info.value)


def test_imported_sessions_pass_redaction(tmp_path: Path) -> None:
    lines = [*SESSION_LINES[:2], _entry("user", {"role": "user", "content": "deploy with AKIAIOSFODNN7EXAMPLE please"})]
    (trace,) = import_claude_code(_write(tmp_path, lines)).traces
    redacted, findings = Redactor().redact_data(trace.as_mapping(), skip_keys=TRACE_ID_FIELDS)
    assert findings and "AKIAIOSFODNN7EXAMPLE" not in json.dumps(redacted)
    assert Trace.model_validate(redacted).trace_id == SESSION


@pytest.mark.parametrize(
    ("content", "fmt"),
    [
        ('{"messages": [{"role": "user", "content": "hi"}]}\n', "openai-jsonl"),
        ('[{"role": "user", "content": "hi"}]\n', "openai-jsonl"),
        ('{"info": {}, "tasks": [], "simulations": []}', "tau2"),
        ('[{"task_id": 1, "reward": 1.0, "traj": [], "info": {}}]', "tau-bench"),
        ('{"resourceSpans": []}\n', "otel"),
    ],
)
def test_sniff_format_tells_each_format_by_its_first_record(tmp_path: Path, content: str, fmt: str) -> None:
    path = tmp_path / "traces.json"
    path.write_text(content)
    assert sniff_format(path) == fmt
