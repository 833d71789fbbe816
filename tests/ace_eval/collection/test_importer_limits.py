"""Issue 37: importers read within the safe reader's limits (size, regular files, nesting, integer digits) and
refuse what the collection could not read back before writing anything (fail on e5bcddd)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.collection import CollectionError
from ace_eval.collection.importers import import_traces

RUN, CHAT = "b7ad6b7169203331", "00f067aa0ba902b7"


def _attr(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


def _otlp(run_attrs: list[dict[str, Any]], start: object = "1", messages: str = "") -> dict[str, Any]:
    messages = messages or json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Refund order 7"}]}])
    run = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": RUN,
        "name": "invoke_agent support",
        "startTimeUnixNano": start,
        "attributes": [
            _attr("gen_ai.operation.name", {"stringValue": "invoke_agent"}),
            _attr("pydantic_ai.all_messages", {"stringValue": messages}),
            *run_attrs,
        ],
    }
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [run]}]}]}


def _deep_source(tmp_path: Path) -> Path:
    """An OTLP file whose run span has an `arrayValue` nested 150 deep."""
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(150):
        value = {"arrayValue": {"values": [value]}}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_otlp([_attr("deep", value)])))
    return path


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["collection", "import", *args])


def _limited(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`ace-eval collection import ...` in a process with 2 GB of address space and a minute at most."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "ace_eval.cli", "collection", "import", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def test_a_source_linked_to_dev_zero_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "spans.json").symlink_to("/dev/zero")
    out = _limited(["--format", "otel", "spans.json", "--out", "coll"], tmp_path)
    assert out.returncode == 2, out.stderr[-500:]
    assert "not a regular file" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "coll").exists()


def test_a_fifo_in_a_claude_code_folder_is_refused_not_waited_on(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    os.mkfifo(sessions / "a.jsonl")
    out = _limited(["--format", "claude-code", "sessions", "--out", "coll"], tmp_path)
    assert out.returncode == 2, out.stderr[-500:]
    assert "a.jsonl: not a regular file" in out.stderr and "Traceback" not in out.stderr


def test_a_source_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_otlp([])))
    monkeypatch.setenv("ACE_JSON_MAX_BYTES", "100")
    for fmt in ("otel", "claude-code"):
        with pytest.raises(CollectionError, match="over the 100-byte limit"):
            import_traces(fmt, path)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fmt", "content", "message"),
    [
        ("otel", "[" * 5000 + "]" * 5000, "nested more than 100 levels"),
        ("otel", '{"resourceSpans": [], "n": ' + "9" * 10_000 + "}", "an integer of more than 100 digits"),
        ("claude-code", '{"type": "user", "x": ' + "[" * 5000 + "]" * 5000 + "}\n", "nested more than 100 levels"),
        ("claude-code", '{"type": "user", "n": ' + "9" * 10_000 + "}\n", "an integer of more than 100 digits"),
        ("otel", json.dumps(_otlp([], messages="[" * 300 + "]" * 300)), "pydantic_ai.all_messages"),
    ],
)
def test_deep_nesting_and_huge_integers_are_clear_errors(tmp_path: Path, fmt: str, content: str, message: str) -> None:
    path = tmp_path / "src.jsonl"
    path.write_text(content)
    result = _cli("--format", fmt, str(path), "--out", str(tmp_path / "coll"))
    assert result.exit_code == 2, result.output
    assert message in result.output and not isinstance(result.exception, RecursionError | ValueError)
    assert not (tmp_path / "coll").exists()


def test_a_start_time_of_ten_thousand_digits_is_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_otlp([], start="9" * 10_000)))
    (trace,) = import_traces("otel", path).traces
    assert trace.question == "Refund order 7"


def test_an_array_value_nested_150_deep_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = _deep_source(tmp_path)
    result = _cli("--format", "otel", str(path), "--out", str(tmp_path / "coll"))
    assert result.exit_code == 2, result.output
    assert "nested more than 100 levels" in result.output
    assert not (tmp_path / "coll").exists()


def test_a_tau_bench_reward_of_nan_is_a_located_error(tmp_path: Path) -> None:
    run = {"task_id": 1, "reward": float("nan"), "info": {"task": {"user_id": "u", "instruction": "hi"}}, "traj": []}
    path = tmp_path / "results.json"
    path.write_text(json.dumps([run]))  # Python writes NaN, as tau-bench's json.dump does
    result = _cli("--format", "tau-bench", str(path), "--out", str(tmp_path / "coll"))
    assert result.exit_code == 2, result.output
    assert "field '[0].reward'" in result.output and "finite" in result.output


def test_e2e_refuses_the_deep_source_before_making_a_run_folder(tmp_path: Path) -> None:
    path = _deep_source(tmp_path)
    out = tmp_path / "runs"
    args = ["e2e", "--traces", str(path), "--format", "otel", "--no-benchmark", "--output-dir", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "nested more than 100 levels" in result.output and "--resume" not in result.output
    assert not out.exists()  # no failed run left behind whose --resume could never succeed
