"""Every script in benchmarks/ runs in a small smoke mode, so a benchmark that stops working fails the build.

Each script runs in a subprocess with the arguments below (`--smoke` where the script has one, else its smallest
sizes); scripts that need a model or run real LLM calls are listed with the reason they are not run. A new script
must be added to one of the two tables. The retrieval-quality check on the banking documents runs the full
benchmark (MiniLM over 698 documents, ~2 min) on the copy shipped in tests/data/ (the `shared_data` fixture).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

SMOKE: dict[str, list[str]] = {
    "scale.py": ["--smoke"],
    "dedup_scale.py": ["--smoke"],
    "search.py": ["--smoke"],
    "skillbook_ops.py": ["--smoke"],
    "store.py": ["--smoke"],
    "memory.py": ["--smoke"],
    "retrieval_quality.py": ["--smoke"],
    "quarantine.py": ["--sizes", "200", "--queries", "10"],
    "any_density.py": [],
    "gate_stats.py": ["--smoke"],
    "serve_load.py": ["--smoke"],
    "report.py": ["--samples", "5"],
    "redaction_scripts.py": ["--smoke"],
    "pipeline_overhead.py": ["--traces", "6", "--skills", "100", "--workers", "1", "--skip-latency", "--repeat", "1"],
}
NOT_RUN = {
    "cli_startup.py": "times the installed CLI's start-up over repeated runs: seconds each, nothing to shrink",
    "demo_quality.py": "runs the embedded LLM over the demo traces (minutes)",
    "llm_models.py": "calls the embedded LLM (model download and minutes)",
    "local_model.py": "calls the embedded LLM (model download and minutes)",
    "peer_side_by_side.py": "needs the peer's own venv (ace-framework 0.13.0 on Python 3.12), not installed in CI",
    "redaction.py": "times the redactor over the shared trace data (tests/ace/redaction cover the redactor)",
    "sandbox_latency.py": "spawns sandboxed children in a loop (tests/ace/sandbox cover the sandbox)",
    "tau2_airline_cost.py": "runs every airline train and test task through tau2 (minutes; the tau2 tests cover it)",
    "tau_bench_replay.py": "replays the shared tau-bench data set (tests/ace_eval cover the replay)",
}


def test_every_benchmark_script_is_smoke_tested_or_says_why_not() -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SMOKE) | set(NOT_RUN), "add the new benchmark script to SMOKE (or NOT_RUN with a reason)"
    assert not set(SMOKE) & set(NOT_RUN)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_benchmark_smoke(script: str, shared_data: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *SMOKE[script]],
        cwd=ROOT,
        env={**os.environ, "ACE_SHARED_DATA": str(shared_data)},
        capture_output=True,
        text=True,
        timeout=580,
        check=False,
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    assert result.stdout.strip(), f"{script} printed nothing"


@pytest.mark.timeout(3600)
def test_hybrid_retrieval_quality_on_the_banking_documents_is_not_worse_than_before(shared_data: Path) -> None:
    data = shared_data / "retrieval-banking"
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "retrieval_quality.py"), "--data-dir", str(data)],
        capture_output=True,
        text=True,
        check=True,
    )
    row = re.search(r"^hybrid RRF k=60\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", result.stdout, re.MULTILINE)
    assert row is not None, result.stdout
    assert float(row[3]) >= 0.371, f"hybrid nDCG@10 fell below 0.371 (main, 2026-12-01):\n{result.stdout}"
