"""`GET /v1/skills?query=...&max_tokens=...` (the `SkillInstructions` selection of the current version) and
`SkillInstructions.from_url` (polls `GET /v1/skillbook` with the ETag, swaps skills without a restart, keeps the
last good ones when the server is down, within its timeout). Servers on 127.0.0.1."""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

import pytest
from _serve_helpers import request, running, url
from _store_support import BY_TEST

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.integrations.pydantic_ai import SkillInstructions
from ace_eval.store import SkillbookStore

REFUND = "Refund requests: the agent refunded an order without checking the refund window."
WEATHER = "Weather questions: the agent guessed the city instead of asking for it."


def _publish(store: Path, *issues: str) -> int:
    book = Skillbook()
    for issue in issues:
        book.add_skill("context", issue, issue.lower().split()[:4], insight=f"Do it right: {issue[:30]}")
    return (
        SkillbookStore.open_or_create(store).publish_skillbook(book, produced_by=BY_TEST, ungated_reason="test").number
    )


def _skills(base: str, query: str, max_tokens: int | None = None, token: str | None = None) -> tuple[int, dict]:
    params = {"query": query} | ({"max_tokens": str(max_tokens)} if max_tokens is not None else {})
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    status, _, body = request(f"{base}/v1/skills?{urllib.parse.urlencode(params)}", headers=headers)
    return status, json.loads(body)


def test_skills_selected_for_a_query_within_the_budget(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store, embedder=TestEmbedder(), token="t0ken-for-the-test") as app:
        base = url(app, "")
        assert _skills(base, "refund my order", token="t0ken-for-the-test")[0] == 404  # no version yet
        assert _skills(base, "refund my order")[0] == 401
        _publish(store, REFUND, WEATHER)
        status, answer = _skills(base, "refund my order please", token="t0ken-for-the-test")
        assert status == 200 and answer["version"] == 1
        assert answer["skills"][0]["issue"] == REFUND
        assert "<lesson" in answer["instructions"] and REFUND.split(":")[0] in answer["instructions"]
        full = len(answer["skills"])
        status, small = _skills(base, "refund my order please", max_tokens=60, token="t0ken-for-the-test")
        assert status == 200 and len(small["skills"]) < full
        assert _skills(base, " ", token="t0ken-for-the-test")[0] == 400
        assert _skills(base, "refund", max_tokens=0, token="t0ken-for-the-test")[0] == 400


def test_from_url_swaps_skills_without_a_restart_and_keeps_them_when_the_server_is_down(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store, token="t0ken-for-the-test") as app:
        base = url(app, "")
        skills = SkillInstructions.from_url(
            base, token="t0ken-for-the-test", poll_seconds=0, timeout=2.0, embedder=TestEmbedder()
        )
        assert skills.store_version is None and skills.for_prompt("refund my order") == ""  # 404: no skills yet
        _publish(store, REFUND)
        assert REFUND.split(":")[0] in skills.for_prompt("refund my order")
        assert skills.store_version == 1
        _publish(store, REFUND, WEATHER)
        assert WEATHER.split(":")[0] in skills.for_prompt("weather in which city")
        assert skills.store_version == 2
    started = time.monotonic()
    with pytest.warns(RuntimeWarning, match="kept version 2"):
        text = skills.for_prompt("weather in which city")  # the server is gone
    assert time.monotonic() - started < 3.0 and WEATHER.split(":")[0] in text


def test_from_url_without_the_token_warns_and_has_no_skills(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _publish(store, REFUND)
    with running(store, token="t0ken-for-the-test") as app:
        with pytest.warns(RuntimeWarning, match="HTTP 401"):
            skills = SkillInstructions.from_url(url(app, ""), poll_seconds=60, embedder=TestEmbedder())
        assert skills.for_prompt("refund my order") == "" and skills.store_version is None
