"""`GET /v1/skillbook`: the store's current version as JSON with `ETag` = its number; `If-None-Match` gives 304;
a rollback while serving changes what is served. Server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

from _serve_helpers import request, running, url
from _store_support import BY_TEST, skillbook_file

from ace_eval.store import SkillbookStore


def test_the_current_version_with_its_etag_and_304(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store) as app:
        assert request(url(app, "/v1/skillbook"))[0] == 404  # nothing published yet
        versions = SkillbookStore(store)  # the store serve opened, published to from outside
        for n in (1, 2):
            source = skillbook_file(tmp_path / f"src{n}" / "skillbook.json", *[f"Issue {i}" for i in range(n)])
            versions.publish(source, produced_by=BY_TEST, ungated_reason=f"test version {n}")
        status, headers, body = request(url(app, "/v1/skillbook"))
        assert status == 200 and headers["ETag"] == '"2"'
        assert json.loads(body) == json.loads(versions.skillbook_path(2).read_bytes())
        assert request(url(app, "/v1/skillbook"), headers={"If-None-Match": '"2"'})[0] == 304
        versions.rollback()  # while serving
        status, headers, body = request(url(app, "/v1/skillbook"), headers={"If-None-Match": '"2"'})
        assert status == 200 and headers["ETag"] == '"1"'
        assert json.loads(body) == json.loads(versions.skillbook_path(1).read_bytes())
        assert json.loads(request(url(app, "/v1/status"))[2])["version"] == 1


def test_the_skillbook_needs_the_token(tmp_path: Path) -> None:
    with running(tmp_path / "store", token="t0ken-for-the-test") as app:
        assert request(url(app, "/v1/skillbook"))[0] == 401
        assert request(url(app, "/v1/skillbook"), headers={"Authorization": "Bearer t0ken-for-the-test"})[0] == 404
