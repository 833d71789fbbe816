"""A store version's gate evidence, as `ace-eval gate` writes it, on the store page in a real headless Chromium:
the gate's own rows (sides, difference with its interval, the test, the tasks that moved, the rule) and both sides'
pass^k with intervals; offline, no console error, no request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser_support import CHROMIUM, INSTALL, Watched, chromium
from _store_support import BY_TEST, cli, skillbook_file

from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore
from ace_eval.gate import compare
from ace_eval.report.store_page import gate_view
from ace_eval.store import ProducedBy, SkillbookStore

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=f"needs Chromium: {INSTALL}")


def _scores(solved: set[int], label: str) -> BenchmarkScores:
    tasks = {f"t{i:02}": [TrialScore.of(1.0 if i in solved else 0.0) for _ in range(4)] for i in range(20)}
    return BenchmarkScores(benchmark="toy", tasks=tasks, num_trials=4, seeds=[1, 2, 3, 4], skillbook=label)


EVIDENCE = json.loads(
    compare(_scores({0, 1, 2, 3}, "store version 1"), _scores(set(range(8)), "run_0123456789ab")).model_dump_json()
)


def test_the_typed_view_is_used_for_the_gates_own_evidence_and_the_generic_one_otherwise() -> None:
    view = gate_view(EVIDENCE)
    labels = [label for label, _ in view.rows]
    assert labels[:6] == ["benchmark", "baseline", "candidate", "difference", "p-value", "tasks"]
    assert view.pass_k_sides == ["baseline", "candidate"] and view.pass_k[0][1][0].startswith("20.0 [")
    assert gate_view({"decision": "promote", "p_value": 0.01}).rows == [("p_value", "0.01")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def test_the_store_page_shows_the_gates_table(browser: Any, tmp_path: Path) -> None:
    store = SkillbookStore.create(tmp_path / "st")
    store.publish(
        skillbook_file(tmp_path / "1.json", "Refunds need the order"), produced_by=BY_TEST, ungated_reason="seed"
    )
    store.publish(
        skillbook_file(tmp_path / "2.json", "Refunds need the order", "Seats"),
        produced_by=ProducedBy(kind="gate"),
        gate=EVIDENCE,
    )
    done = cli("report", store.root, "-o", tmp_path / "store.html")
    assert done.exit_code == 0, done.output
    watched = Watched(browser, (tmp_path / "store.html").as_uri())
    page = watched.open()
    gate = page.locator("#v2 .gate")
    assert "hold" in gate.locator("h3").inner_text()
    cells = {r.locator("th").inner_text(): r.locator("td").inner_text() for r in gate.locator(".gate-rows tr").all()}
    assert cells["baseline"] == "store version 1" and cells["candidate"] == "run_0123456789ab"
    assert cells["difference"].startswith("+20.0 points of success rate, 95 % interval [")
    assert cells["p-value"].startswith("0.125 (two-sided sign-flip test, exact, 16 patterns over the 4 tasks")
    assert cells["tasks"] == "4 better, 0 worse, 16 the same: t04 +100, t05 +100, t06 +100, t07 +100"
    assert cells["why held"] == "p = 0.125 is not below alpha = 0.05"
    rows = gate.locator(".pass-k tbody tr")
    assert rows.count() == 4
    assert [c.inner_text() for c in rows.first.locator("td").all()][:2] == ["1", "20.0 [5.0, 40.0]"]
    assert [c.inner_text() for c in rows.nth(3).locator("td").all()][2] == "40.0 [20.0, 60.0]"
    assert watched.errors == [] and watched.blocked == [] and watched.requests == [watched.url]
    watched.context.close()


def test_a_runs_page_shows_its_gate_verdict(browser: Any, tmp_path: Path) -> None:
    from _run_support import good_book, write_run

    from ace_eval.benchmarks.scores import write_scores
    from ace_eval.gate import GATE_FILE

    run = write_run(tmp_path / "run", good_book(), spans=False)
    before, after = _scores({0, 1}, "none (the run's baseline)"), _scores(set(range(10)), "skillbook.json")
    write_scores(run / "baseline" / "scores.json", before)
    write_scores(run / "evaluation" / "scores.json", after)
    (run / GATE_FILE).write_text(compare(before, after).model_dump_json(), encoding="utf-8")
    done = cli("report", run, "-o", tmp_path / "run.html")
    assert done.exit_code == 0, done.output
    watched = Watched(browser, (tmp_path / "run.html").as_uri())
    page = watched.open()
    page.click("#tabs button[data-tab=benchmark]")
    gate = page.locator("#gate")
    assert gate.is_visible() and "promote" in gate.locator("h3").inner_text()
    cells = {r.locator("th").inner_text(): r.locator("td").inner_text() for r in gate.locator(".gate-rows tr").all()}
    assert cells["p-value"].startswith("0.007812 (two-sided sign-flip test, exact, 256 patterns over the 8 tasks")
    assert cells["tasks"].startswith("8 better, 0 worse, 12 the same: t02 +100")
    first = [c.inner_text() for c in gate.locator(".gate-pass-k tbody tr").first.locator("td").all()]
    assert first == ["pass^1", "10.0 [0.0, 25.0]", "50.0 [30.0, 70.0]"]
    assert watched.errors == [] and watched.blocked == [] and watched.requests == [watched.url]
    watched.context.close()
