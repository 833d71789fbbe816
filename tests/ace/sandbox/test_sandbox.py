"""`execute_code`'s sandbox: time, memory and output limits, no inherited secrets, its own temporary directory."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ace.sandbox.runner import SandboxLimits, SandboxResult, run_code, sandbox_environment

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection" / "traces.jsonl"
FAST = SandboxLimits(timeout_s=1.0, memory_mb=128, max_output_bytes=1_000)


def demo_trace(index: int = 1) -> dict[str, Any]:
    """A real demo trace: a basic-economy reservation cancelled against the policy (reward 0)."""
    with DEMO.open(encoding="utf-8") as f:
        trace: dict[str, Any] = json.loads(f.readlines()[index])
    return trace


def run(code: str, limits: SandboxLimits = FAST, trace: dict[str, Any] | None = None) -> SandboxResult:
    return asyncio.run(run_code(code, trace if trace is not None else demo_trace(), limits=limits))


# ------------------------------------------------------------------------------------------ it works
def test_normal_computation_over_the_trace() -> None:
    code = """
import json
from collections import Counter
calls = [c["function"]["name"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
print(Counter(calls).most_common())
reservation = json.loads(messages[7]["content"])
print(reservation["cabin"], sum(f["price"] for f in reservation["flights"]), trace["reward"])
"""
    result = run(code)
    assert result.ok and not result.timed_out and not result.memory_exceeded and not result.truncated
    assert result.stdout.splitlines() == [
        "[('get_user_details', 1), ('get_reservation_details', 1), ('cancel_reservation', 1)]",
        "basic_economy 94 0.0",
    ]
    assert result.as_text().startswith("OK (")


def test_a_final_expression_is_printed_like_a_repl() -> None:
    assert run("x = len(messages)\nx * 2").stdout == "26\n"
    assert run("None").stdout == ""  # a None value prints nothing, as in a REPL
    assert "(no output" in run("y = 1").as_text()


def test_a_bytes_trace_is_used_as_it_is() -> None:
    data = json.dumps({"question": "q", "messages": [{"role": "user", "content": "hi"}]}).encode()
    result = asyncio.run(run_code("messages[0]['content'], trace['question']", data, limits=FAST))
    assert result.stdout == "('hi', 'q')\n"


def test_an_exception_is_reported_with_only_the_models_frames() -> None:
    result = run("def total(xs):\n    return sum(xs) / len(xs)\n\ntotal([])")
    assert not result.ok and result.exit_code == 1 and not result.memory_exceeded
    assert "ZeroDivisionError: division by zero" in result.stderr
    assert 'File "<execute_code>", line 4' in result.stderr and "return sum(xs) / len(xs)" in result.stderr
    assert "_bootstrap" not in result.stderr  # the sandbox's own frames are noise to the model
    assert result.as_text().startswith("The code raised an exception; see stderr.")


def test_a_syntax_error_and_an_explicit_exit_are_results() -> None:
    syntax = run("def (")
    assert syntax.exit_code == 1 and "SyntaxError" in syntax.stderr
    exited = run("raise SystemExit(4)")
    assert exited.exit_code == 4 and exited.as_text().startswith("The code exited with status 4.")
    assert run("raise SystemExit").ok


# -------------------------------------------------------------------------------------------- limits
def test_an_infinite_loop_is_killed_at_the_time_limit() -> None:
    started = time.perf_counter()
    result = run("print('started', flush=True)\nwhile True:\n    pass")
    elapsed = time.perf_counter() - started
    assert result.timed_out and not result.ok and result.exit_code == -9
    assert 1.0 <= elapsed < 3.0
    assert result.stdout == "started\n"  # output before the kill is kept
    assert "ran longer than the 1 s time limit and was killed" in result.as_text()


def test_a_sleeping_process_is_killed_too() -> None:
    result = run("import time\ntime.sleep(60)", SandboxLimits(timeout_s=0.5))
    assert result.timed_out and result.duration_s < 2.0


def test_a_memory_bomb_fails_cleanly_and_the_parent_is_unharmed() -> None:
    before = resource.getrlimit(resource.RLIMIT_AS)
    grown = run("chunks = []\nwhile True:\n    chunks.append(bytearray(10_000_000))")
    assert grown.memory_exceeded and not grown.timed_out and not grown.ok
    assert "MemoryError" in grown.stderr and "128 MB memory limit" in grown.as_text()
    at_once = run("'x' * 10**10")
    assert at_once.memory_exceeded and at_once.duration_s < 1.0
    # The limit was the child's: the parent's is unchanged and it can still allocate what the child could not.
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    assert len(bytearray(200_000_000)) == 200_000_000
    assert run("sum(range(1000))").stdout == "499500\n"  # and the next run works


def test_output_over_the_cap_is_truncated_with_a_marker() -> None:
    result = run("print('x' * 100_000)\nimport sys\n_ = sys.stderr.write('e' * 5_000)")
    assert result.ok and result.truncated
    assert result.stdout == "x" * 1_000 and result.stdout_dropped == 100_001 - 1_000
    assert result.stderr == "e" * 1_000 and result.stderr_dropped == 4_000
    text = result.as_text()
    assert "[... output truncated: 99,001 more bytes of stdout dropped ...]" in text
    assert "[... output truncated: 4,000 more bytes of stderr dropped ...]" in text
    assert len(text) < 2_400


def test_output_under_the_cap_is_whole() -> None:
    result = run("print('y' * 900)")
    assert not result.truncated and result.stdout == "y" * 900 + "\n" and "truncated" not in result.as_text()


# -------------------------------------------------------------------------------------- isolation
def test_the_parents_environment_is_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-4242")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-4242")
    monkeypatch.setenv("LOGFIRE_TOKEN", "logfire-secret-4242")
    result = run("import os\nprint(sorted(os.environ))\nprint([v for v in os.environ.values() if 'secret' in v])")
    assert result.ok and "4242" not in result.stdout
    assert result.stdout.splitlines() == ["['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']", "[]"]
    assert set(sandbox_environment("/tmp/x")) == {"HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"}


def test_the_parent_process_environment_file_cannot_be_read() -> None:
    # Secrets the parent was started with live in /proc/<ppid>/environ, readable by the same user.
    result = run("import os\nprint(open(f'/proc/{os.getppid()}/environ', 'rb').read())")
    assert result.exit_code == 1 and result.stdout == ""
    assert "PermissionError: sandbox: cannot open" in result.stderr
    assert "only files in the working directory" in result.stderr


def test_files_outside_the_working_directory_are_refused() -> None:
    for code in (
        "open('/etc/passwd').read()",
        "open(os.path.expanduser('~') + '/../../etc/hostname').read()",
        "import os\nos.symlink('/etc/passwd', 'link')\nopen('link').read()",
        "import os\nos.chdir('/')\nopen('etc/passwd').read()",
    ):
        result = run(code if code.startswith("import") else "import os\n" + code)
        assert result.exit_code == 1 and "PermissionError: sandbox" in result.stderr, code


def test_its_own_temporary_directory_is_writable_and_removed() -> None:
    result = run(
        "import os, tempfile\nopen('notes.txt', 'w').write('kept')\n"
        "print(os.getcwd())\nprint(open('notes.txt').read(), sorted(os.listdir('.')))\n"
        "print(tempfile.gettempdir() == os.getcwd())"
    )
    assert result.ok
    home, listing, same_tmp = result.stdout.splitlines()
    assert Path(home).name.startswith("ace-sandbox-") and Path(home) != Path.cwd()
    assert listing == "kept ['code.py', 'notes.txt', 'trace.json']" and same_tmp == "True"
    assert not Path(home).exists()


def test_a_file_over_the_size_limit_fails_cleanly() -> None:
    result = run("open('big', 'wb').write(b'0' * (3 << 20))", SandboxLimits(timeout_s=1.0, max_file_mb=1))
    assert result.exit_code == 1 and "File too large" in result.stderr


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("import socket", "module 'socket' is not available"),
        ("import subprocess", "module 'subprocess' is not available"),
        ("import urllib.request", "module 'urllib.request' is not available"),
        ("import http.client", "module 'http.client' is not available"),
        ("import ctypes", "module 'ctypes' is not available"),
        ("import os\nos.fork()", "os.fork is not allowed"),
        ("import os\nos.system('id')", "os.system is not allowed"),
        ("import os\nos.kill(os.getppid(), 9)", "os.kill is not allowed"),
        ("import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))", "resource.setrlimit is not allowed"),
    ],
)
def test_network_processes_signals_and_raising_limits_are_refused(code: str, message: str) -> None:
    result = run(code)
    assert result.exit_code == 1 and message in result.stderr


def test_the_standard_librarys_data_modules_are_available() -> None:
    code = (
        "import json, re, math, statistics, collections, itertools, functools, datetime, textwrap, difflib, csv\n"
        "statistics.mean([1, 2, 4]), math.isclose(0.1 + 0.2, 0.3), re.findall(r'HAT\\d+', 'HAT114 HAT227')"
    )
    result = run(code)
    assert result.stdout == "(2.3333333333333335, True, ['HAT114', 'HAT227'])\n"


def test_urllib_parse_is_available_but_not_its_network_half() -> None:
    assert run("from urllib.parse import unquote\nunquote('a%20b')").stdout == "'a b'\n"


def test_site_packages_are_not_importable() -> None:
    result = run("import numpy")
    assert result.exit_code == 1 and "ModuleNotFoundError" in result.stderr


def test_cancelling_the_run_kills_the_process_group() -> None:
    marker = f"cancel-me-{uuid.uuid4().hex}"

    async def cancel_midway() -> int | None:
        task = asyncio.create_task(run_code(f"'{marker}'\nwhile True: pass", demo_trace(), limits=FAST))
        await asyncio.sleep(0.4)
        pid = _sandbox_pid(marker)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pid

    pid = asyncio.run(cancel_midway())
    assert pid is not None, "the sandbox process was not found while it ran"
    assert not Path(f"/proc/{pid}").exists()


def _sandbox_pid(marker: str) -> int | None:
    """The pid of the sandbox process whose code contains `marker`."""
    for proc in Path("/proc").iterdir():
        try:
            if (
                proc.name.isdigit()
                and b"_bootstrap.py" in (proc / "cmdline").read_bytes()
                and marker in (proc / "cwd" / "code.py").read_text()
            ):
                return int(proc.name)
        except OSError:
            continue
    return None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout_s": 0}, "timeout_s must be a positive"),
        ({"memory_mb": 8}, "memory_mb must be at least 32"),
        ({"max_output_bytes": 10}, "max_output_bytes must be at least 100"),
        ({"max_file_mb": 0}, "max_file_mb must be at least 1"),
    ],
)
def test_limits_are_validated(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SandboxLimits(**kwargs)
    assert SandboxLimits(timeout_s=0.5, memory_mb=32, max_output_bytes=100, max_file_mb=1).memory_mb == 32


def test_a_missing_interpreter_raises_oserror() -> None:
    with pytest.raises(NotADirectoryError):
        asyncio.run(run_code("1", demo_trace(), limits=FAST, python=os.devnull + "/python"))
