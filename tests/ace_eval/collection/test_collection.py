"""Trace collections: the `Trace` model, the writer, reading back, and every refusal with its line and field."""

from __future__ import annotations

import importlib.util
import json
import math
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ace_eval.collection import (
    MANIFEST_FILE,
    TRACES_FILE,
    UNPARSED_ARGUMENTS,
    AssistantMessage,
    CollectionError,
    CollectionWriter,
    ToolMessage,
    Trace,
    iter_collection,
    read_collection,
    read_manifest,
    repair_collection,
    tool_arguments,
    write_collection,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def conversation(call_id: str = "call_1") -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": "Cancel reservation ABC123, I'm user_7."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_reservation_details", "arguments": '{"reservation_id": "ABC123"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "name": "get_reservation_details",
            "content": '{"cabin": "business"}',
        },
        {"role": "assistant", "content": "It is business class, so it can be cancelled. Confirm?", "refusal": None},
    ]


def make_trace(trace_id: str = "t-1", **fields: Any) -> Trace:
    values: dict[str, Any] = {
        "source_system": "test-agent",
        "trace_id": trace_id,
        "task_id": "7",
        "question": "Cancel ABC123",
        "messages": conversation(),
        "reward": 1.0,
    }
    return Trace.model_validate({**values, **fields})


# --- Trace -----------------------------------------------------------------------------------------------------


def test_trace_uid_is_derived_and_checked() -> None:
    trace = make_trace("task-7-trial-0")
    assert trace.trace_uid == "test-agent:task-7-trial-0"
    assert make_trace("x", trace_uid="test-agent:x").trace_uid == "test-agent:x"
    with pytest.raises(ValidationError, match="must be source_system:trace_id"):
        make_trace("x", trace_uid="other:x")


def test_trace_is_frozen_and_refuses_unknown_fields() -> None:
    trace = make_trace()
    with pytest.raises(ValidationError, match="frozen"):
        trace.reward = 0.0
    with pytest.raises(ValidationError, match="rewards"):
        make_trace(rewards=1.0)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"source_system": "a:b"}, "source_system"),
        ({"reward": "1"}, "valid number"),
        ({"reward": True}, "valid number"),
        ({"reward": math.nan}, "finite"),
        ({"question": ""}, "at least 1 character"),
        ({"messages": []}, "at least one message"),
        ({"metadata": {"when": {1, 2}}}, "not a JSON value"),
        ({"ground_truth": {"x": math.inf}}, "not a JSON number"),
    ],
)
def test_trace_refuses_bad_values(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        make_trace(**fields)


def test_trace_accepts_multi_part_content_and_provider_fields() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, *conversation()[2:]]
    trace = make_trace(messages=messages, reward=None, skills_in_context=["ctx-00001"])
    assert trace.messages == messages
    assert trace.reward is None and not trace.is_success()


def test_typed_views_of_a_trace() -> None:
    trace = make_trace()
    typed = trace.chat_messages()
    assert [type(m).__name__ for m in typed] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert isinstance(typed[2], AssistantMessage) and typed[2].tool_calls is not None
    assert typed[2].tool_calls[0].function.name == "get_reservation_details"
    assert isinstance(typed[3], ToolMessage) and typed[3].tool_call_id == "call_1"
    assert trace.num_tool_calls == 1
    assert trace.is_success() and not make_trace(reward=0.5).is_success() and make_trace(reward=0.5).is_success(0.5)


def test_tool_arguments_keeps_malformed_calls_visible() -> None:
    assert tool_arguments({"user_id": "mia"}) == '{"user_id": "mia"}'
    assert tool_arguments('{"user_id": "mia"}') == '{"user_id": "mia"}'
    assert tool_arguments(None) == "{}"
    assert json.loads(tool_arguments("{'user_id': mia")) == {UNPARSED_ARGUMENTS: "{'user_id': mia"}
    assert json.loads(tool_arguments("[1]")) == {UNPARSED_ARGUMENTS: "[1]"}
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": tool_arguments("{oops")}}
    make_trace(
        messages=[{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [call]}]
    )


@settings(max_examples=30, deadline=None)
@given(
    text=st.text(min_size=1, max_size=40),
    reward=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    meta=st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5) | st.booleans(), max_size=3),
)
def test_trace_json_round_trip(text: str, reward: float | None, meta: dict[str, Any]) -> None:
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": text}]
    trace = make_trace(question=text, messages=messages, reward=reward, metadata=meta, feedback=text)
    line = trace.model_dump_json()
    assert "\n" not in line
    assert Trace.model_validate(json.loads(line)) == trace


# --- writing and reading --------------------------------------------------------------------------------------


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    traces = [make_trace("a"), make_trace("b", reward=0.0, task_id="8"), make_trace("c", reward=None, task_id=None)]
    with CollectionWriter(tmp_path / "c", source_system="test-agent", benchmark="demo", models={"agent": "m"}) as w:
        w.extend(traces)
        assert "test-agent:a" in w and w.counts.traces == 3
    manifest, back = read_collection(tmp_path / "c")
    assert back == traces
    assert list(iter_collection(tmp_path / "c")) == traces
    assert manifest.counts.model_dump() == {"traces": 3, "with_reward": 2, "successes": 1, "tasks": 2}
    assert (manifest.source_system, manifest.benchmark, manifest.models) == ("test-agent", "demo", {"agent": "m"})
    assert read_manifest(tmp_path / "c") == manifest
    assert stat.S_IMODE((tmp_path / "c" / MANIFEST_FILE).stat().st_mode) == 0o644
    assert len((tmp_path / "c" / TRACES_FILE).read_text().splitlines()) == 3


def test_writer_keeps_the_manifest_current_after_each_trace(tmp_path: Path) -> None:
    writer = CollectionWriter(tmp_path, source_system="test-agent")
    writer.append(make_trace("a"))
    manifest, traces = read_collection(tmp_path)  # readable mid-run, without close()
    assert manifest.counts.traces == 1 and len(traces) == 1
    writer.close()
    writer.close()  # idempotent
    with pytest.raises(CollectionError, match="closed"):
        writer.append(make_trace("b"))


def test_bulk_writer_counts_on_close(tmp_path: Path) -> None:
    manifest = write_collection(tmp_path, [make_trace("a"), make_trace("b")], source_system="test-agent")
    assert manifest.counts.traces == 2
    assert read_collection(tmp_path)[0].counts.traces == 2


def test_writer_refusals(tmp_path: Path) -> None:
    with CollectionWriter(tmp_path, source_system="test-agent") as writer:
        writer.append(make_trace("a"))
        with pytest.raises(CollectionError, match=r"field 'trace_uid': 'test-agent:a' is already in the collection"):
            writer.append(make_trace("a"))
        with pytest.raises(CollectionError, match=r"field 'source_system': 'other' differs"):
            writer.append(make_trace("b", source_system="other"))
        with pytest.raises(TypeError, match="takes a Trace"):
            writer.append({"trace_id": "c"})  # type: ignore[arg-type]
    assert read_collection(tmp_path)[0].counts.traces == 1
    with pytest.raises(CollectionError, match="already holds a trace collection"):
        CollectionWriter(tmp_path, source_system="test-agent")
    with pytest.raises(CollectionError, match="differs from the collection's 'test-agent'"):
        CollectionWriter(tmp_path, source_system="other", mode="append")
    with pytest.raises(CollectionError, match="not a trace collection"):
        CollectionWriter(tmp_path / "missing", mode="append")
    with pytest.raises(CollectionError, match="needs a source_system"):
        CollectionWriter(tmp_path / "new")


def test_append_resumes_and_auto_mode(tmp_path: Path) -> None:
    with CollectionWriter(tmp_path, source_system="test-agent", mode="auto", models={"agent": "a"}) as writer:
        writer.append(make_trace("a"))
    with CollectionWriter(tmp_path, mode="auto", models={"user": "u"}) as writer:
        assert writer.trace_uids == {"test-agent:a"}
        writer.append(make_trace("b"))
    manifest, traces = read_collection(tmp_path)
    assert [t.trace_id for t in traces] == ["a", "b"]
    assert manifest.models == {"agent": "a", "user": "u"}


def test_writer_is_thread_safe(tmp_path: Path) -> None:
    with CollectionWriter(tmp_path, source_system="test-agent", durable=False) as writer:

        def work(worker: int) -> None:
            for i in range(10):
                writer.append(make_trace(f"w{worker}-{i}", task_id=str(i)))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    manifest, traces = read_collection(tmp_path)
    assert manifest.counts.traces == len(traces) == 40
    assert manifest.counts.tasks == 10


_KILLED_WRITER = """
import os, signal, sys
from ace_eval.collection import CollectionWriter, Trace
writer = CollectionWriter(sys.argv[1], source_system="test-agent")
for i in range(3):
    writer.append(Trace(source_system="test-agent", trace_id=f"t{i}", question="q",
                        messages=[{"role": "user", "content": "hi"}], reward=1.0))
# A partial line, as if the process died while writing the fourth trace.
writer._file.write(b'{"source_system": "test-agent", "trace_id": "t3", "quest')
writer._file.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_run_keeps_every_finished_trace(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)], capture_output=True, check=False)
    assert run.returncode == -9, run.stderr.decode()
    with pytest.raises(CollectionError, match=r"traces.jsonl, line 4: truncated"):
        read_collection(tmp_path)
    with CollectionWriter(tmp_path, mode="append") as writer:  # what --resume does
        assert writer.dropped_partial_line
        assert writer.trace_uids == {"test-agent:t0", "test-agent:t1", "test-agent:t2"}
        writer.append(make_trace("t3"))
    manifest, traces = read_collection(tmp_path)
    assert [t.trace_id for t in traces] == ["t0", "t1", "t2", "t3"] and manifest.counts.traces == 4


def test_repair_drops_a_partial_line_and_recounts(tmp_path: Path) -> None:
    write_collection(tmp_path, [make_trace("a")], source_system="test-agent")
    with (tmp_path / TRACES_FILE).open("ab") as f:
        f.write(make_trace("b").model_dump_json().encode() + b"\n")  # a finished line the manifest missed
        f.write(b'{"trace_id": "c", "mess')
    manifest, dropped = repair_collection(tmp_path)
    assert dropped and manifest.counts.traces == 2
    assert [t.trace_id for t in read_collection(tmp_path)[1]] == ["a", "b"]


def test_append_refuses_a_corrupt_collection(tmp_path: Path) -> None:
    write_collection(tmp_path, [make_trace("a"), make_trace("b")], source_system="test-agent")
    _edit_line(1, lambda r: r.update(question=7))(tmp_path)
    with pytest.raises(
        CollectionError, match=r"traces.jsonl, line 1: field 'question': input should be a valid string"
    ):
        CollectionWriter(tmp_path, mode="append")


def test_a_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    write_collection(tmp_path, [make_trace("a"), make_trace("b")], source_system="test-agent")
    path = tmp_path / TRACES_FILE
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert len(read_collection(tmp_path)[1]) == 2
    manifest, dropped = repair_collection(tmp_path)
    assert not dropped and path.read_bytes().endswith(b"\n") and manifest.counts.traces == 2


# --- refusals on read -----------------------------------------------------------------------------------------


def _edit_line(number: int, edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / TRACES_FILE
        lines = path.read_text().splitlines(keepends=True)
        record = json.loads(lines[number - 1])
        edit(record)
        lines[number - 1] = json.dumps(record) + "\n"
        path.write_text("".join(lines))

    return apply


def _edit_manifest(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / MANIFEST_FILE
        manifest = json.loads(path.read_text())
        edit(manifest)
        path.write_text(json.dumps(manifest, indent=1))

    return apply


def _set_arguments(record: dict[str, Any]) -> None:
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{"reservation_id": '


def _truncate(folder: Path) -> None:
    path = folder / TRACES_FILE
    path.write_bytes(path.read_bytes()[:-40])


def _append_duplicate(folder: Path) -> None:
    path = folder / TRACES_FILE
    path.write_text(path.read_text() + path.read_text().splitlines(keepends=True)[0])


def _drop_last_line(folder: Path) -> None:
    path = folder / TRACES_FILE
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))


REFUSALS: list[tuple[str, Callable[[Path], object], str]] = [
    (
        "arguments not JSON",
        _edit_line(2, _set_arguments),
        r"traces.jsonl, line 2: field 'messages\[2\].tool_calls\[0\].function.arguments': not valid JSON",
    ),
    ("truncated last line", _truncate, r"traces.jsonl, line 3: truncated"),
    (
        "wrong type",
        _edit_line(3, lambda r: r.update(reward="1.0")),
        r"traces.jsonl, line 3: field 'reward': input should be a valid number",
    ),
    (
        "wrong type inside a message",
        _edit_line(1, lambda r: r["messages"][1].update(content=5)),
        r"traces.jsonl, line 1: field 'messages\[1\].content': must be a string or a list of content parts",
    ),
    ("missing messages", _edit_line(2, lambda r: r.pop("messages")), r"line 2: field 'messages': missing"),
    ("empty messages", _edit_line(2, lambda r: r.update(messages=[])), r"line 2: field 'messages': empty"),
    (
        "unknown role",
        _edit_line(1, lambda r: r["messages"][0].update(role="developer")),
        r"line 1: field 'messages\[0\].role': must be one of .* got 'developer'",
    ),
    (
        "tool result answering nothing",
        _edit_line(1, lambda r: r["messages"][3].update(tool_call_id="call_9")),
        r"line 1: field 'messages\[3\].tool_call_id': 'call_9' answers no tool call",
    ),
    ("unknown field", _edit_line(2, lambda r: r.update(score=1)), r"line 2: field 'score': unknown field"),
    ("not an object", lambda f: (f / TRACES_FILE).write_text("[1, 2]\n"), r"line 1: a trace must be a JSON object"),
    ("duplicate uid", _append_duplicate, r"line 4: field 'trace_uid': 'test-agent:a' duplicates line 1"),
    (
        "other source system",
        _edit_line(2, lambda r: r.update(source_system="other", trace_uid="other:b")),
        r"line 2: field 'source_system': 'other' differs from the manifest's 'test-agent'",
    ),
    (
        "unknown version",
        _edit_manifest(lambda m: m.update(format_version="2")),
        r"manifest.json, line 3: field 'format_version': unknown format_version '2'.*update your ace-eval \(git pull",
    ),
    (
        "missing version",
        _edit_manifest(lambda m: m.pop("format_version")),
        r"manifest.json: field 'format_version': missing",
    ),
    (
        "manifest wrong type",
        _edit_manifest(lambda m: m["counts"].update(traces="3")),
        r"manifest.json, line \d+: field 'counts.traces': input should be a valid integer",
    ),
    (
        "counts disagree",
        _drop_last_line,
        r"manifest.json, line \d+: field 'counts.traces': the manifest says 3 but traces.jsonl holds 2",
    ),
    (
        "successes disagree",
        _edit_manifest(lambda m: m["counts"].update(successes=3)),
        r"field 'counts.successes': the manifest says 3 but traces.jsonl holds 2",
    ),
    ("manifest not JSON", lambda f: (f / MANIFEST_FILE).write_text('{"format": '), r"manifest.json, line 1, column 12"),
    ("no traces file", lambda f: (f / TRACES_FILE).unlink(), r"traces.jsonl: missing"),
    ("no manifest", lambda f: (f / MANIFEST_FILE).unlink(), r"not a trace collection: no manifest.json"),
]


@pytest.mark.parametrize(("name", "corrupt", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_read_refuses_with_file_line_and_field(
    tmp_path: Path, name: str, corrupt: Callable[[Path], object], message: str
) -> None:
    write_collection(
        tmp_path, [make_trace("a"), make_trace("b"), make_trace("c", reward=0.0)], source_system="test-agent"
    )
    read_collection(tmp_path)  # valid before
    corrupt(tmp_path)
    with pytest.raises(CollectionError, match=message):
        read_collection(tmp_path)


def test_collection_error_carries_its_location(tmp_path: Path) -> None:
    write_collection(tmp_path, [make_trace("a"), make_trace("b")], source_system="test-agent")
    _edit_line(2, lambda r: r.update(reward="x"))(tmp_path)
    with pytest.raises(CollectionError) as info:
        read_collection(tmp_path)
    assert (Path(info.value.file or "").name, info.value.line, info.value.field) == ("traces.jsonl", 2, "reward")


# --- the demo collection ----------------------------------------------------------------------------------------


def test_demo_collection_reads_back_and_matches_its_generator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest, traces = read_collection(EXAMPLES / "demo-collection")
    assert 8 <= manifest.counts.traces <= 12
    assert 0 < manifest.counts.successes < manifest.counts.traces
    tools = {
        c.function.name
        for t in traces
        for m in t.chat_messages()
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls or ()
    }
    assert {"get_user_details", "get_reservation_details", "cancel_reservation", "update_reservation_flights"} <= tools
    assert all(t.feedback and t.ground_truth is not None for t in traces)
    # The committed files are what the script writes today.
    spec = importlib.util.spec_from_file_location("make_demo_collection", EXAMPLES / "make_demo_collection.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, script)  # its dataclass looks itself up there
    spec.loader.exec_module(script)
    assert script.write_demo(tmp_path).counts == manifest.counts
    assert read_collection(tmp_path)[1] == traces
