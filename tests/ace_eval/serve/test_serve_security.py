"""`ace-eval serve` security: loopback by default, a non-loopback host needs a token (exit 2 before listening or
writing), and with a token every endpoint but /healthz answers 401 without it. Servers on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _serve_helpers import otlp_json, request, running, url
from click.testing import CliRunner

from ace.exceptions import UserError
from ace_eval.cli import main
from ace_eval.serve import ServeApp, ServeConfig, is_loopback

TRACE = "0af7651916cd43dd8448eb211c80319c"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_a_non_loopback_host_without_a_token_exits_2_before_writing(tmp_path: Path, host: str) -> None:
    store = tmp_path / "store"
    result = CliRunner().invoke(main, ["serve", "--store", str(store), "--host", host])
    assert result.exit_code == 2, result.output
    assert "--token" in result.output
    assert not store.exists()
    with pytest.raises(UserError):
        ServeApp(ServeConfig(store=store, host=host))


def test_loopback_hosts() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")


def test_with_a_token_every_endpoint_but_healthz_needs_it(tmp_path: Path) -> None:
    token = "s3cret-token-for-the-test"
    body = otlp_json(TRACE, [{"spanId": "00f067aa0ba902b7", "name": "invoke_agent x"}])
    with running(tmp_path / "store", token=token) as app:
        assert request(url(app, "/healthz"))[0] == 200
        for path in ("/v1/status", "/metrics"):
            assert request(url(app, path))[0] == 401
            assert request(url(app, path), headers={"Authorization": "Bearer wrong"})[0] == 401
            assert request(url(app, path), headers={"Authorization": f"Bearer {token}"})[0] == 200
        json_type = {"Content-Type": "application/json"}
        status, headers, _ = request(url(app, "/v1/traces"), body, json_type)
        assert status == 401 and headers["WWW-Authenticate"] == "Bearer"
        feedback = json.dumps({"trace_id": TRACE, "reward": 1}).encode()
        assert request(url(app, "/v1/feedback"), feedback, json_type)[0] == 401
        assert app.status()["spans_acknowledged"] == 0
        authorized = {**json_type, "Authorization": f"Bearer {token}"}
        assert request(url(app, "/v1/traces"), body, authorized)[0] == 200
        assert app.status()["spans_acknowledged"] == 1


def test_status_and_metrics(tmp_path: Path) -> None:
    with running(tmp_path / "store") as app:
        body = otlp_json(TRACE, [{"spanId": "00f067aa0ba902b7", "name": "invoke_agent x"}])
        request(url(app, "/v1/traces"), body, {"Content-Type": "application/json"})
        status = json.loads(request(url(app, "/v1/status"))[2])
        assert status["spans_acknowledged"] == 1 and status["version"] is None
        assert {"traces_assembled", "traces_learned", "queues"} <= set(status)
        code, headers, text = request(url(app, "/metrics"))
        assert code == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "ace_serve_spans_acknowledged_total 1\n" in text.decode()
        assert 'ace_serve_requests_total{outcome="accepted"} 1' in text.decode()
        assert request(url(app, "/nowhere"))[0] == 404


def test_header_and_body_limits(tmp_path: Path) -> None:
    with running(tmp_path / "store", max_body=2048) as app:
        assert request(url(app, "/v1/status"), headers={"X-Big": "a" * 70_000})[0] == 431  # one line over 64 KiB
        many = {f"X-H{i}": "1" for i in range(120)}  # over http.server's 100 headers
        assert request(url(app, "/v1/status"), headers=many)[0] == 431
        assert request(url(app, "/v1/feedback"), b"{" * 4096, {"Content-Type": "application/json"})[0] == 413
        assert request(url(app, "/healthz"))[0] == 200  # and it still serves
