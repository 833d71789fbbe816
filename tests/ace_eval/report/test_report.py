"""`ace-eval report`: the page's sections and data from a scripted run, comparison, redaction, size."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from _report_support import CARD, EMAIL, OPENAI, page_json, planted_collection, scripted_run
from click.testing import CliRunner

from ace.redaction.scan import scan_path
from ace_eval.cli import main
from ace_eval.collection import Trace, write_collection
from ace_eval.report.scores import pass_hat_k_interval

ROOT = Path(__file__).resolve().parents[3]
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scripted_run(tmp_path_factory.mktemp("runs"))


def _report(tmp_path: Path, *runs: Path) -> str:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", *map(str, runs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out} (" in result.output
    return out.read_text(encoding="utf-8")


def test_the_page_is_self_contained_and_holds_every_section(demo_run: Path, tmp_path: Path) -> None:
    html = _report(tmp_path, demo_run)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)  # no script, style or image fetched
    assert "<link" not in html and "@import" not in html
    for heading in ("Pipeline", "Models per role", "Tokens and cost per role", "Time per step", "Skills over samples"):
        assert f">{heading}<" in html
    assert html.count('<polyline class="series') == 4  # added, updated, removed, quarantined
    [run] = page_json(html, "run-data")
    assert run["status"] == "completed" and len(run["samples"]) == 10
    assert {u["role"] for u in run["usage"]} == {"reflector", "skill_manager"}
    assert [s["name"] for s in run["pipeline"]][:3] == ["redact", "reflect", "update"]
    assert run["benchmark"] is None  # --no-benchmark: no benchmark section
    assert run["config"]["benchmark"] == "none (replay of --traces)"  # not the default benchmark's name
    assert 'data-tab="benchmark"' not in html


def test_every_occurrence_of_a_skill_leads_to_its_sample_reflection_session_and_trace(
    demo_run: Path, tmp_path: Path
) -> None:
    html = _report(tmp_path, demo_run)
    [run] = page_json(html, "run-data")
    details = [d for chunk in page_json(html, "detail-chunk") for d in chunk]
    traces = {uid: t for chunk in page_json(html, "trace-chunk") for uid, t in chunk.items()}
    assert len(details) == 10 and len(traces) == 10
    skill = next(s for s in run["skills"] if len(s["occurrences"]) > 1)
    for occurrence in skill["occurrences"]:
        sample = details[occurrence["sample"]]
        assert (sample["trace_uid"], sample["epoch"]) == (occurrence["trace_uid"], occurrence["epoch"])
        assert sample["reflection"]["key_insight"].startswith("Check the policy first")
        [sm] = [s for s in sample["sessions"] if s["kind"] == "sm"]
        assert any(c["tool"] in ("add_skill", "update_skill") and c["skill_id"] == skill["id"] for c in sm["calls"])
        assert traces[occurrence["trace_uid"]]["messages"]
    assert skill["issue"] and skill["keywords"] and skill["status"] == "active"
    assert html.count("# Airline customer service policy (demo)") == 1  # the system prompt all 10 traces share
    assert all(t["messages"][0]["content"] == {"shared": 0} for t in traces.values())


def test_two_runs_are_compared(demo_run: Path, tmp_path: Path) -> None:
    other = scripted_run(tmp_path / "other", traces=planted_collection(tmp_path / "planted"))
    html = _report(tmp_path, demo_run, other)
    assert 'data-tab="compare"' in html and "Comparison of 2 runs" in html
    runs = page_json(html, "run-data")
    assert [r["id"] for r in runs] == [demo_run.name, other.name]
    assert ">Skills that changed (" in html and ">Skills in some runs only (" in html


def _found(path: Path) -> set[tuple[str, str]]:
    return {(loc.kind, loc.preview) for loc in scan_path(path).locations}


@pytest.mark.parametrize("redact", [True, False], ids=["redacted", "not-redacted"])
def test_scan_finds_nothing_in_the_page_that_it_does_not_find_in_the_folder(tmp_path: Path, redact: bool) -> None:
    folder = scripted_run(tmp_path / "runs", traces=planted_collection(tmp_path / "planted"), redact=redact)
    html = _report(tmp_path, folder)
    in_page, in_folder = _found(tmp_path / "report.html"), _found(folder)
    assert in_page <= in_folder
    if redact:
        assert in_page == set() and EMAIL not in html and OPENAI not in html and CARD not in html
        assert "[REDACTED:email#1]" in html  # the transcript is there, redacted as the reflector saw it
    else:
        assert EMAIL in html and in_page  # the run kept the raw text: so does the page, nothing more


def test_a_100_sample_run_makes_a_page_under_2_mb(tmp_path: Path) -> None:
    folder = scripted_run(tmp_path / "runs", epochs=10)
    html = _report(tmp_path, folder)
    [run] = page_json(html, "run-data")
    assert len(run["samples"]) == 100 and {row[3] for row in run["samples"]} == {"ok"}  # ten epochs of ten traces
    assert len(html.encode("utf-8")) < 2_000_000


def _episodes(folder: Path, rewards: dict[str, list[float]]) -> None:
    traces = [
        Trace(source_system="tau", trace_id=f"{task}-{i}", task_id=task, question=task, messages=HELLO, reward=r)
        for task, values in rewards.items()
        for i, r in enumerate(values)
    ]
    write_collection(folder, traces, source_system="tau")


def test_pass_hat_k_with_its_interval_over_tasks() -> None:
    def episode(task: str, reward: float) -> Trace:
        return Trace(
            source_system="tau", trace_id=f"{task}-{reward}", task_id=task, question=task, messages=HELLO, reward=reward
        )

    episodes = [episode("a", 1.0), episode("a", 1.0), episode("b", 1.0), episode("b", 0.0)]
    one = pass_hat_k_interval(episodes, 1)
    assert one is not None and one["value"] == pytest.approx(0.75) and one["tasks"] == 2
    assert 0.0 <= one["low"] < 0.75 < one["high"] <= 1.0
    two = pass_hat_k_interval(episodes, 2)
    assert two is not None and two["value"] == pytest.approx(0.5)  # C(2,2)/C(2,2) and C(1,2)/C(2,2)
    assert pass_hat_k_interval(episodes, 3) is None  # too few trials


def test_the_benchmark_section_shows_pass_hat_k_before_and_after_and_per_task_deltas(
    demo_run: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(demo_run, copy)
    _episodes(copy / "baseline", {"t1": [0.0, 0.0], "t2": [1.0, 0.0]})
    _episodes(copy / "evaluation", {"t1": [1.0, 1.0], "t2": [1.0, 0.0]})
    html = _report(tmp_path, copy)
    [run] = page_json(html, "run-data")
    rows = {row["k"]: row for row in run["benchmark"]["pass_hat_k"]}
    assert rows[1]["before"]["value"] == pytest.approx(0.25) and rows[1]["after"]["value"] == pytest.approx(0.75)
    assert rows[2]["before"]["value"] == pytest.approx(0.0) and rows[2]["after"]["value"] == pytest.approx(0.5)
    deltas = {t["task"]: t["delta"] for t in run["benchmark"]["tasks"]}
    assert deltas == {"t1": pytest.approx(1.0), "t2": pytest.approx(0.0)}
    assert len(run["benchmark"]["episodes"]) == 8
    assert 'data-tab="benchmark"' in html and "+0.500" in html  # pass^1's change, in the table


def test_the_overview_shows_the_benchmark_options_as_resolved(demo_run: Path, tmp_path: Path) -> None:
    """run.json's `resolved_benchmark` (e.g. the data folder read from the environment) has its own table; a
    replay that ran no agent has none."""
    assert ">Benchmark " not in _report(tmp_path, demo_run)
    copy = tmp_path / "run"
    shutil.copytree(demo_run, copy)
    record = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    resolved = {"name": "tau-bench-airline", "options": {"data_dir": "/data/tau-bench/airline", "limit": 2}}
    (copy / "run.json").write_text(json.dumps({**record, "resolved_benchmark": resolved}), encoding="utf-8")
    html = _report(tmp_path, copy)
    [run] = page_json(html, "run-data")
    assert run["resolved_benchmark"] == resolved
    assert ">Benchmark tau-bench-airline: its options as resolved<" in html
    assert '<th>data_dir</th><td class="mono">/data/tau-bench/airline</td>' in html


def test_the_templates_ship_as_package_data() -> None:
    """The wheel packages the whole `src/ace_eval` folder (hatch keeps non-Python files), templates included."""
    config = tomllib.loads((ROOT / "ace-eval" / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["src/ace_eval"] and not {"exclude", "only-include", "artifacts"} & set(wheel)
    shipped = {p.name for p in (ROOT / "ace-eval" / "src" / "ace_eval" / "report" / "templates").iterdir()}
    assert {"report.html.j2", "report.css", "report.js"} <= shipped
    assert "jinja2>=3.1" in config["project"]["dependencies"]


def test_text_that_looks_like_markup_stays_text(demo_run: Path, tmp_path: Path) -> None:
    """A skill's text closing the JSON block or opening a tag is data in the page, never markup."""
    copy = tmp_path / "run"
    shutil.copytree(demo_run, copy)
    hostile = "</script><img src=x onerror=alert(1)> & 'quotes' <!--"
    for name in ("skillbook.json", "skillbook.snapshot.json"):
        book = json.loads((copy / name).read_text(encoding="utf-8"))
        book["skills"][0]["issue"] = hostile
        (copy / name).write_text(json.dumps(book), encoding="utf-8")
    html = _report(tmp_path, copy)
    assert "<img src=x" not in html and "</script><img" not in html
    [run] = page_json(html, "run-data")
    assert run["skills"][0]["issue"] == hostile


def test_a_run_that_collected_its_traces_scores_them_as_before(demo_run: Path, tmp_path: Path) -> None:
    """Without `--traces` the agent's collected episodes are the benchmark's "before" (no baseline/ is run)."""
    copy = tmp_path / "run"
    shutil.copytree(demo_run, copy)
    record = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    record["config"]["traces"] = None
    (copy / "run.json").write_text(json.dumps(record), encoding="utf-8")
    _episodes(copy / "evaluation", {"cancel-business": [1.0]})
    [run] = page_json(_report(tmp_path, copy), "run-data")
    [row] = run["benchmark"]["pass_hat_k"]
    assert row["before"]["tasks"] == len({t["task"] for t in run["benchmark"]["tasks"] if t["before"] is not None})
    assert row["before"]["tasks"] > 1 and row["after"]["tasks"] == 1
    assert sum(e["phase"] == "before" for e in run["benchmark"]["episodes"]) == 10  # the demo's ten episodes
