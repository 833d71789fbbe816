"""Issue 35's scripted acceptance: four projects, one promotable cluster, promote, pull twice into a fifth, two
projects find it harmful: quarantined globally and, after a pull, in the fifth project. No network, no LLM."""

from __future__ import annotations

import json
from pathlib import Path

from _fed_support import CONFIRM, OWN, RATE_LIMIT, RATE_LIMIT_PARAPHRASE, SECRET, find_harmful, project_book

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace_eval.federation import JOURNAL_FIELDS, Hub, promote, pull, push, read_state


def test_four_projects_promote_pull_revoke(tmp_path: Path) -> None:
    embedder = TestEmbedder()
    hub = Hub(tmp_path / "hub")
    planted = (
        "harness",
        f"Deploy key {SECRET} leaks into the tool logs of the retail agent",
        ["logs"],
        "Never echo the deploy key xylophone-banana-phrase into logs",
    )
    books = {
        "airline": project_book(tmp_path / "airline" / "skillbook.json", "airline", [RATE_LIMIT, CONFIRM]),
        "retail": project_book(
            tmp_path / "retail" / "skillbook.json", "retail", [RATE_LIMIT_PARAPHRASE, CONFIRM, planted]
        ),
        "telecom": project_book(tmp_path / "telecom" / "skillbook.json", "telecom", [RATE_LIMIT, OWN]),
        "bank": project_book(
            tmp_path / "bank" / "skillbook.json", "bank", [(*OWN[:1], "Banks differ", ["banks"], "Ask which bank")]
        ),
    }
    for name, path in books.items():
        push(hub, path, project=name, embedder=embedder)
    state = read_state(hub, embedder)
    promotable = [c for c in state.clusters if c.promotable(state.policy)]
    assert len(promotable) == 1
    assert promotable[0].projects == ["airline", "retail", "telecom"]
    assert len(promotable[0].hashes) == 2  # the paraphrase matched by embedding, not by hash
    confirm = next(c for c in state.clusters if c.section == "context" and len(c.projects) == 2)
    assert not confirm.promotable(state.policy)

    [gid] = promote(hub, None, by="ana", reason="holds in three domains", embedder=embedder)
    global_book = hub.global_store().load()
    occurrences = global_book.require_skill(gid).occurrences
    assert sorted(o.source_system for o in occurrences) == ["project:airline", "project:retail", "project:telecom"]
    status = read_state(hub, embedder).to_json()["clusters"]
    assert [c["status"] for c in status if c["global_id"] == gid] == ["global"]

    fifth = project_book(tmp_path / "shop" / "skillbook.json", "shop", [OWN])
    assert pull(hub, fifth, embedder=embedder).added
    assert not pull(hub, fifth, embedder=embedder).changed
    pulled = [s for s in Skillbook.load_from_file(fifth).skills() if s.section == "harness"]
    assert len(pulled) == 1
    assert pulled[0].occurrences[0].source_system == f"federation:{hub.name}"
    assert pulled[0].occurrences[0].trace_id == gid
    before = hub.global_store().current_number()

    # two projects find it harmful: a supporter (its own skill) and the fifth (its pulled copy)
    find_harmful(books["airline"], "airline", "harness-00001")
    push(hub, books["airline"], project="airline", embedder=embedder)
    assert hub.global_store().current_number() == before  # one contradiction: not yet
    find_harmful(fifth, "shop", pulled[0].id)
    result = push(hub, fifth, project="shop", embedder=embedder)
    assert result.revoked == [gid]
    assert hub.global_store().load().require_skill(gid).quarantine is not None
    after = read_state(hub, embedder)
    assert [c.status for c in after.clusters if c.global_id == gid] == ["quarantined"]
    assert after.globals[gid].contradicting == ["airline", "shop"]

    pull(hub, fifth, embedder=embedder)
    mine = Skillbook.load_from_file(fifth).require_skill(pulled[0].id)
    assert mine.quarantine is not None and gid in mine.quarantine.reason
    pull(hub, books["telecom"], embedder=embedder)  # a supporter's own skill is quarantined too, with the reason
    assert Skillbook.load_from_file(books["telecom"]).require_skill("harness-00001").quarantine is not None

    # the journal holds no text: only whitelisted fields, no planted secret or phrase
    journal = hub.journal_path.read_text(encoding="utf-8")
    assert SECRET not in journal and "xylophone" not in journal and "backoff" not in journal
    assert all(set(json.loads(line)) <= JOURNAL_FIELDS for line in journal.splitlines())
    contribution = (hub.contributions_dir / "retail.json").read_text(encoding="utf-8")
    assert SECRET not in contribution  # contributions are redacted
