"""The report in a real headless Chromium (Debian's `chromium`, driven by Playwright): it opens from disk, a click
on a skill shows its trace and its skill-manager session, the samples table filters, sorts and opens a sample; no
console error, and no request leaves the page (every one is blocked, and none is attempted).

`ACE_REPORT_SCREENSHOTS=docs/img` saves the screenshots the docs show (`docs/report.md`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser_support import CHROMIUM, INSTALL, Watched, chromium
from _newcomer_walk import walk
from _report_support import scripted_run
from click.testing import CliRunner

from ace_eval.cli import main

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=f"needs Chromium: {INSTALL}")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    out = tmp / "report.html"
    result = CliRunner().invoke(main, ["report", str(scripted_run(tmp / "runs", epochs=2)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def walk_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The newcomer's walk's run page (written before the browser starts: its event loop trips `run_sync`)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        run, result = walk(tmp_path_factory.mktemp("walk"), monkeypatch)
    assert result.exit_code == 0, result.output
    return run / "report.html"


@pytest.fixture(scope="module")
def browser(report: Path, walk_report: Path) -> Iterator[Any]:
    """Started after the run (the sync API holds an event loop that `asyncio.run` would trip on)."""
    with chromium() as launched:
        yield launched


def _shot(page: Any, name: str, height: int = 860) -> None:
    folder = os.environ.get("ACE_REPORT_SCREENSHOTS")
    if folder:
        page.set_viewport_size({"width": 1280, "height": height})
        page.screenshot(path=str(Path(folder) / name))
        page.set_viewport_size({"width": 1280, "height": 860})


def test_a_click_on_a_skill_shows_its_trace_and_session_offline(browser: Any, report: Path) -> None:
    watched = Watched(browser, report.as_uri())
    page = watched.open()
    assert page.locator("h2", has_text="Run run_").is_visible()
    assert page.locator(".card", has_text="samples").first.inner_text().startswith("20")
    _shot(page, "report-overview.png")

    page.click("#tabs button[data-tab=learning]")
    assert page.locator("svg.chart polyline").count() == 4
    page.locator(".skill-item").first.click()
    detail = page.locator(".skill-detail")
    assert detail.locator("h3 .mono").first.inner_text() == "context-00001"
    assert "Issue:" in detail.inner_text() and "Occurrences (" in detail.inner_text()
    sample = detail.locator(".occurrence-sample")
    assert "Reflection" in sample.inner_text() and "Check the policy first" in sample.inner_text()
    session = sample.locator(".session", has_text="sm.session")
    assert session.count() == 1 and "add_skill(" in session.inner_text()  # the tool call with its arguments
    assert "li_wei_2093" in sample.locator(".transcript").inner_text()  # the trace: the task as the user put it
    assert "Airline customer service policy (demo)" in sample.locator(".transcript").inner_text()  # a shared text
    page.locator(".skill-detail").evaluate("box => { box.scrollTop = 330; }")  # the session and the trace
    _shot(page, "report-skill.png", height=1100)

    page.click("#tabs button[data-tab=samples]")
    rows = page.locator("table.samples tbody tr")
    assert rows.count() == 20
    page.fill(".sample-filter", "cancel-business")
    assert rows.count() == 2  # one trace, two epochs
    page.fill(".sample-filter", "")
    page.click("table.samples th[data-col='11']")  # sort by question
    first = rows.first.locator("td").nth(1).inner_text()
    assert first == min(rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count()))
    rows.first.click()
    assert "Transcript (redacted trace)" in page.locator(".sample-detail").inner_text()

    assert watched.errors == []
    assert watched.blocked == [] and watched.requests == [watched.url]  # nothing was even attempted
    watched.context.close()


def test_tabs_and_samples_are_deep_links_and_a_failed_run_shows_its_outcome(browser: Any, walk_report: Path) -> None:
    """The newcomer's walk's page: `#learning` opens that tab, `#sample-2` the failed refund with its outcome, the
    failing tool call and its error; clicks write the address; no "UNSET", no agent model for a replay."""
    url = walk_report.as_uri()
    watched = Watched(browser, url + "#learning")
    page = watched.open()
    assert page.locator("section[data-tab=learning]").first.is_visible()
    assert not page.locator("section[data-tab=overview]").first.is_visible()
    models = page.locator("section[data-tab=overview]").first.inner_text()
    assert (
        "none (a replay of --traces: no agent ran)" in models and "local" not in models.split("Models per role")[1][:80]
    )

    page.goto(url + "#sample-2")
    detail = page.locator(".sample-detail").first
    assert page.locator("section[data-tab=samples]").first.is_visible() and detail.is_visible()
    text = detail.inner_text()
    assert text.startswith("Sample 2 ·") and "Task: Refund order A999" in text
    assert "Feedback: The agent run ended in an error: ValueError: no order A999." in text
    assert "→ issue_refund(" in text and "error: ValueError: no order A999" in text  # the call and its error
    assert "UNSET" not in text and " · ok" in text  # session headers say ok, not OpenTelemetry's UNSET

    rows = page.locator("table.samples tbody tr")
    assert [rows.nth(i).locator("td").nth(1).locator(".clip").inner_text() for i in range(3)] == [
        "Refund order A100",
        "Refund order A999",
        "Refund order B7",
    ]
    assert rows.nth(0).locator("td.outcome").inner_text().startswith("reward 1")
    assert rows.nth(1).locator("td.outcome").inner_text().startswith("The agent run ended in an error")
    assert rows.nth(1).locator("td").nth(3).inner_text() == "ok"  # the processing state, apart from the outcome
    rows.nth(2).click()
    assert page.evaluate("location.hash") == "#sample-3"
    page.click("#tabs button[data-tab=overview]")
    assert page.evaluate("location.hash") == "#overview"
    assert watched.errors == [] and watched.blocked == []
    watched.context.close()


def test_the_watch_sees_a_request_and_the_page_policy_refuses_it(browser: Any, report: Path, tmp_path: Path) -> None:
    """The checks above cannot pass by not looking: an image from the web is refused by the page's own policy
    (a console error, no request); without the policy, the request is attempted, seen and blocked."""
    html = report.read_text(encoding="utf-8").replace("</body>", '<img src="https://example.com/x.png"></body>')
    leaky = tmp_path / "leaky.html"
    leaky.write_text(html, encoding="utf-8")
    watched = Watched(browser, leaky.as_uri())
    watched.open()
    assert any("Content Security Policy" in e for e in watched.errors) and watched.blocked == []
    watched.context.close()

    open_page = tmp_path / "no-policy.html"
    open_page.write_text(html.replace("Content-Security-Policy", "X-Disabled"), encoding="utf-8")
    watched = Watched(browser, open_page.as_uri())
    watched.open()
    assert watched.blocked == ["https://example.com/x.png"]
    watched.context.close()
