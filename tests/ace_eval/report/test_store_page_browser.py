"""`ace-eval report STORE` in a real headless Chromium: lineage, current, who produced each version, the gate's
evidence as a table (rendered from its JSON), a tampered file flagged; offline, no console error, no request."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser_support import CHROMIUM, INSTALL, Watched, chromium
from _store_support import BY_TEST, cli, skillbook_file

from ace_eval.store import ProducedBy, SkillbookStore

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=f"needs Chromium: {INSTALL}")

GATE = {
    "decision": "promote",
    "delta": {"mean": 0.15, "ci95": [0.05, 0.25]},
    "p_value": 0.0123,
    "alpha": 0.05,
    "baseline": {"label": "incumbent v1", "pass_hat_k": [0.5, 0.4, 0.35, 0.3]},
    "candidate": {"label": "run_0123456789ab", "pass_hat_k": [{"value": 0.65, "ci95": [0.5, 0.8]}, 0.55, 0.5, 0.45]},
    "n_tasks": 20,
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SkillbookStore:
    tmp = tmp_path_factory.mktemp("store")
    made = SkillbookStore.create(tmp / "st")
    made.publish(skillbook_file(tmp / "1.json", "Refunds need the order"), produced_by=BY_TEST, ungated_reason="seed")
    made.publish(
        skillbook_file(tmp / "2.json", "Refunds need the order", "Bags"),
        produced_by=BY_TEST,
        ungated_reason="tried by hand",
    )
    made.rollback()
    made.publish(
        skillbook_file(tmp / "3.json", "Refunds need the order", "Seats"),
        produced_by=ProducedBy(kind="gate", run_id="run_0123456789ab"),
        gate=GATE,
    )
    return made


@pytest.fixture(scope="module")
def browser(store: SkillbookStore) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def _page(store: SkillbookStore, out: Path) -> Path:
    done = cli("report", store.root, "-o", out)
    assert done.exit_code == 0, done.output
    assert "3 versions" in done.output
    return out


def test_the_store_page_shows_lineage_current_and_the_gate_table(
    browser: Any, store: SkillbookStore, tmp_path: Path
) -> None:
    watched = Watched(browser, _page(store, tmp_path / "store.html").as_uri())
    page = watched.open()
    assert page.locator("#current-version").inner_text() == "3"
    assert page.locator("#verified").inner_text() == "yes"
    lineage = page.locator("#lineage li")
    assert [lineage.nth(i).get_attribute("data-version") for i in range(3)] == ["1", "2", "3"]
    assert "current" in lineage.nth(2).inner_text() and "gated: promote" in lineage.nth(2).inner_text()
    assert lineage.nth(2).evaluate("e => getComputedStyle(e).paddingLeft") == lineage.nth(1).evaluate(
        "e => getComputedStyle(e).paddingLeft"
    )  # 2 and 3 are both children of 1 (3 was published after rolling back to 1)
    rows = page.locator("#versions tbody tr")
    assert rows.count() == 3 and "current" in (rows.nth(2).get_attribute("class") or "")
    assert "ungated: tried by hand" in rows.nth(1).inner_text()
    assert "run_0123456789ab" in rows.nth(2).inner_text() and "\t+1 −0 ~0\t" in rows.nth(2).inner_text()

    page.click("#lineage a[href='#v3']")
    gate = page.locator("#v3 .gate")
    assert gate.is_visible() and "promote" in gate.locator("h3").inner_text()
    cells = {r.locator("th").inner_text(): r.locator("td").inner_text() for r in gate.locator(".gate-rows tr").all()}
    assert cells["delta"] == "0.15 [0.05, 0.25]" and cells["p_value"] == "0.0123"
    assert cells["baseline.label"] == "incumbent v1"
    head = [c.inner_text() for c in gate.locator(".pass-k thead th").all()]
    assert head == ["k", "baseline pass^k", "candidate pass^k"]
    first = [c.inner_text() for c in gate.locator(".pass-k tbody tr").first.locator("td").all()]
    assert first == ["1", "0.5", "0.65 [0.5, 0.8]"]
    assert gate.locator(".pass-k tbody tr").count() == 4
    if folder := os.environ.get("ACE_REPORT_SCREENSHOTS"):
        page.screenshot(path=str(Path(folder) / "report-store.png"), full_page=True)
    assert watched.errors == [] and watched.blocked == [] and watched.requests == [watched.url]
    watched.context.close()


def test_a_tampered_version_is_flagged_on_the_page(browser: Any, store: SkillbookStore, tmp_path: Path) -> None:
    copy = tmp_path / "st"
    shutil.copytree(store.root, copy)
    book = copy / "versions" / "0002" / "skillbook.json"
    os.chmod(book, 0o644)
    book.write_bytes(book.read_bytes().replace(b"Bags", b"Bugs"))
    watched = Watched(browser, _page(SkillbookStore(copy), tmp_path / "bad.html").as_uri())
    page = watched.open()
    assert page.locator("#verified").inner_text() == "no"
    assert str(book) in page.locator("#problems").inner_text()
    assert watched.errors == []
    watched.context.close()
