"""`ace-eval serve` with the embedded `local` models (SmolLM2 in llama.cpp, in the learning process): SIGTERM while a
learning sample is inside a model call exits 0 once everything serve owns is flushed, and the batch is left to resume
(the learning process ends with `os._exit` or is killed past --stop-grace: no native runtime torn down under a
running call). Server on 127.0.0.1, bounded loops."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _serve_helpers import agent_span, otlp_json, request

from ace.extras import module_installed
from ace.llm import LocalModelUnavailableError, find_smollm2_gguf


def _read_until(process: subprocess.Popen[bytes], pattern: bytes, seen: bytes, seconds: float) -> tuple[bytes, bytes]:
    """Stderr read until `pattern` appears: (the match's first group or the match, all stderr so far)."""
    assert process.stderr is not None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if ready:
            seen += os.read(process.stderr.fileno(), 4096)
            found = re.search(pattern, seen)
            if found:
                return found.group(found.lastindex or 0), seen
        assert process.poll() is None, seen
    process.kill()
    raise AssertionError(f"no {pattern!r} in {seen!r}")


@pytest.mark.parametrize(
    ("grace", "said"),
    [
        ("0.5", "did not finish within --stop-grace 0.5 s"),  # the learning process is killed past it
        ("120", "learning stopped; batch 1 resumes after its last finished sample"),  # waits for it, then unloads
    ],
)
def test_sigterm_during_a_local_model_call_exits_0_and_leaves_the_batch_to_resume(
    tmp_path: Path, grace: str, said: str
) -> None:
    try:
        find_smollm2_gguf()
    except LocalModelUnavailableError as e:
        pytest.skip(str(e))
    if not module_installed("xllamacpp"):
        pytest.skip("xllamacpp (the `local` extra) is not installed: `python3 dev.py test` installs it")
    store = tmp_path / "store"
    command = [sys.executable, "-c", "from ace_eval.cli import main; main()", "serve", "--store", str(store)]
    command += ["--port", "0", "--feedback-wait", "0", "--learn-every", "2", "--stop-grace", grace]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    try:
        base, seen = _read_until(process, rb"listening on (http://\S+) ", b"", 120)
        for n in range(2):
            span = agent_span("1" * 16, extra=[{"key": "ace.reward", "value": {"doubleValue": 0.0}}])
            body = otlp_json(f"{n + 1:032x}", [span])
            status, _, _ = request(f"{base.decode()}/v1/traces", body, {"Content-Type": "application/json"})
            assert status == 200
        _, seen = _read_until(process, rb"Plan: replay 2 trace", seen, 120)  # the batch's run has started
        time.sleep(1.0)  # inside the first sample's model calls (a sample takes seconds on SmolLM2)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        assert process.stderr is not None
        seen += process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
    text = seen.decode(errors="replace")
    assert process.returncode == 0, text
    assert "stopped; 2 spans acknowledged, 2 traces assembled, 0 learned" in text, text
    assert said in text, text
    assert "Fatal Python error" not in text and "llama_tokenize" not in text, text
    batch = store / "serve" / "learning" / "0001"
    assert json.loads((batch / "batch.json").read_text("utf-8"))["trace_uids"]  # made whole before its run
    assert not (store / "serve" / "learned.jsonl").exists() or not (store / "serve" / "learned.jsonl").read_text()
