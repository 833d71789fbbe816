"""`ace-eval report TRIAL_DIR` in headless Chromium: the scoreboard, the task x candidate heatmap of dev rewards,
the Pareto set, the gate's table, the held-out test result, and each candidate's run page one click away."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from _browser_support import Watched, chromium
from _plugins import install_toy_benchmark
from _trials_support import DEV, TEST, script_candidates
from click.testing import CliRunner

from ace_eval.cli import main


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def test_the_trial_page_shows_the_scoreboard_heatmap_pareto_gate_and_test_with_each_run_one_click_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    script_candidates(monkeypatch)
    out = tmp_path / "trial"
    args = [
        "trials",
        "--vary",
        "skill_manager_model=test:helpful,test:harmful,test:useless",
        "--benchmark",
        "toy-support",
        "--dev-tasks",
        DEV,
        "--test-tasks",
        TEST,
        "--out",
        str(out),
    ]
    with ThreadPoolExecutor(1) as pool:  # the trial's event loops, away from the browser's
        assert pool.submit(CliRunner().invoke, main, args).result().exit_code == 0
    done = CliRunner().invoke(main, ["report", str(out)])
    assert done.exit_code == 0, done.output
    watched = Watched(browser, (out / "report.html").as_uri())
    page = watched.open()
    assert page.locator("#winner").inner_text() == "skill_manager_model=test_helpful"
    assert page.locator("#gate-decision").inner_text() == "promote"
    assert page.locator("#test-mean").inner_text() == "1.000"
    rows = page.locator("#scoreboard tbody tr")
    assert rows.count() == 3
    assert [r.locator("td").nth(6).inner_text() for r in rows.all()] == ["won", "lost", "lost"]
    heat = page.locator("#heatmap tbody tr")
    assert heat.count() == 6
    assert [c.inner_text() for c in heat.first.locator("td").all()] == ["1.00", "0.00", "0.00"]
    assert page.locator("#pareto li").all_inner_texts() == ["skill_manager_model=test_helpful"]
    assert "points of success rate" in page.locator(".gate-rows").inner_text()
    assert watched.errors == [] and watched.blocked == []
    # the loser's run is one click away: its link opens the run's own page
    link = page.locator("tr[data-candidate='skill_manager_model=test_harmful'] a.run-link")
    target = (out / link.get_attribute("href")).resolve()
    watched.context.close()
    assert target.is_file() and target.parent.parent.name == "skill_manager_model=test_harmful"
    run_page = Watched(browser, target.as_uri())
    opened = run_page.open()
    assert target.parent.name in opened.content() and run_page.errors == []
    run_page.context.close()
