"""The store page's view of a gate's evidence is generic: any JSON object renders (estimates with intervals,
`pass_hat_k` lists of any sides, nested objects), and a store is reported on its own."""

from __future__ import annotations

from pathlib import Path

from _store_support import cli, store_with

from ace_eval.report.store_page import gate_view


def test_gate_view_renders_any_evidence_shape() -> None:
    view = gate_view(
        {
            "decision": "hold",
            "delta": {"mean": -0.05, "ci95": [-0.2, 0.1]},
            "p_value": 0.5,
            "bootstrap": {"resamples": 10000, "seed": 7},
            "incumbent": {"pass_hat_k": [{"estimate": 0.5, "interval": [0.3, 0.7]}, 0.4]},
            "challenger": {"pass_hat_k": [0.45]},
            "tasks": ["a", "b"],
        }
    )
    assert view.decision == "hold"
    assert dict(view.rows) == {
        "delta": "-0.05 [-0.2, 0.1]",
        "p_value": "0.5",
        "bootstrap.resamples": "10000",
        "bootstrap.seed": "7",
        "tasks": '["a", "b"]',
    }
    assert view.pass_k_sides == ["incumbent", "challenger"]
    assert view.pass_k == [(1, ["0.5 [0.3, 0.7]", "0.45"]), (2, ["0.4", "—"])]
    bare = gate_view({"verdict": "ok"})
    assert bare.decision is None and bare.rows == [("verdict", "ok")] and bare.pass_k == []


def test_report_on_a_store_writes_its_page_and_refuses_a_mix(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 2)
    done = cli("report", store.root, "-o", tmp_path / "page.html")
    assert done.exit_code == 0, done.output
    html = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert 'id="current-version">2<' in html and "ungated: test version 1" in html
    mixed = cli("report", store.root, tmp_path, "-o", tmp_path / "x.html")
    assert mixed.exit_code == 2 and "report on it alone" in mixed.output
