"""`ace-eval report HUB` in a real headless Chromium: the clusters with their status, the projects x skills matrix,
the promotion and the revocation with who and why; offline, no console error, no request but the page."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _fed_support import CONFIRM, RATE_LIMIT, RATE_LIMIT_PARAPHRASE, find_harmful, project_book
from click.testing import CliRunner

from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.federation import Hub, promote, push

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))  # the report tests' browser support
from _browser_support import CHROMIUM, INSTALL, Watched, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=f"needs Chromium: {INSTALL}")


def test_the_hub_page_shows_clusters_matrix_and_decisions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    e, hub = TestEmbedder(), Hub(tmp_path / "hub")
    books = {
        "airline": project_book(tmp_path / "a.json", "airline", [RATE_LIMIT, CONFIRM]),
        "retail": project_book(tmp_path / "r.json", "retail", [RATE_LIMIT_PARAPHRASE, CONFIRM]),
        "telecom": project_book(tmp_path / "t.json", "telecom", [RATE_LIMIT]),
    }
    for name, path in books.items():
        push(hub, path, project=name, embedder=e)
    [gid] = promote(hub, None, by="ana", reason="holds in three domains", embedder=e)
    for name in ("airline", "retail"):
        find_harmful(books[name], name, "harness-00001")
        push(hub, books[name], project=name, embedder=e)
    monkeypatch.setattr("ace_eval.commands.federate.LazyEmbedder.embed", lambda self, texts: e.embed(texts))
    out = tmp_path / "hub.html"
    done = CliRunner().invoke(main, ["report", str(hub.root), "-o", str(out)])
    assert done.exit_code == 0, done.output
    with chromium() as browser:
        watched = Watched(browser, out.as_uri())
        page = watched.open()
        assert page.locator("#projects-count").inner_text() == "3"
        statuses = {
            page.locator("#clusters tbody tr").nth(i).get_attribute("data-status")
            for i in range(page.locator("#clusters tbody tr").count())
        }
        assert statuses == {"quarantined", "candidate"}
        assert page.locator("#matrix tbody tr").count() == 3
        assert page.locator("#matrix tr[data-project=airline] td.no").count() == 1  # airline contradicts the global
        events = page.locator("#events tbody tr")
        assert [events.nth(i).get_attribute("data-action") for i in range(events.count())] == ["promote", "revoke"]
        assert "ana" in events.nth(0).inner_text() and "holds in three domains" in events.nth(0).inner_text()
        assert "contradicted by 2 project(s): airline, retail" in events.nth(1).inner_text()
        assert gid in events.nth(1).inner_text()
        assert watched.errors == [] and watched.blocked == [] and watched.requests == [watched.url]
