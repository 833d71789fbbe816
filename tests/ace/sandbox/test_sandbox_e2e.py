"""End to end: a recursive reflector whose code tries the `__main__` bypass never gets the parent's key out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SECRET = "sk-proj-e2e-4242-must-not-leak-0000"


def test_the_main_bypass_leaks_no_secret_into_the_runs_outputs() -> None:
    script = Path(__file__).with_name("_sandbox_e2e_session.py")
    env = {**os.environ, "OPENAI_API_KEY": SECRET}  # in the session's /proc/<pid>/environ from the start
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout and SECRET not in done.stderr
    outputs = json.loads(done.stdout)
    [result] = outputs["tool_results"]
    assert "Refused by the sandbox" in result and "cannot open" in result and "/environ" in result
    assert "env: None" in result  # the environment was built from scratch
    assert result in outputs["reflection"]["key_insight"]  # the model copied all it saw: still nothing secret
    [code_span] = [s for s in outputs["spans"] if s["name"] == "execute_code"]
    assert "main.inside" in code_span["attributes"]["ace.code"]  # content recording was on
    assert code_span["attributes"]["ace.sandbox_refusals"] == 1
