"""`ace-eval federate`: permissions checked inside the command (exit 2, hub unchanged), status JSON, idempotent push,
the hub from `$ACE_FEDERATION_HUB` or ace-eval.toml, a missing hub named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fed_support import RATE_LIMIT, project_book
from click.testing import CliRunner

from ace_eval.cli import main


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"
    }


@pytest.fixture
def hub(tmp_path: Path) -> Path:
    root = tmp_path / "hub"
    for name in ("airline", "retail", "telecom"):  # the same skill in three projects: equal hashes, no embedder
        book = project_book(tmp_path / name / "skillbook.json", name, [RATE_LIMIT])
        result = CliRunner().invoke(main, ["federate", "push", str(book), "--project", name, "--hub", str(root)])
        assert result.exit_code == 0, result.output
        assert result.output == f"{name}: 1 eligible, 0 contradicting (its first push)\n"  # nothing replaced
    return root


def test_a_reviewer_the_policy_does_not_name_is_refused_and_the_hub_is_unchanged(hub: Path) -> None:
    (hub / "policy.toml").write_text('promoters = ["ana"]\nrevokers = ["ana"]\n')
    before = files(hub)
    result = CliRunner().invoke(
        main, ["federate", "promote", "--hub", str(hub), "--all", "--by", "bob", "--reason", "ok"]
    )
    assert result.exit_code == 2, result.output
    assert "'bob' may not promote" in result.output and "ana" in result.output
    assert files(hub) == before
    ok = CliRunner().invoke(main, ["federate", "promote", "--hub", str(hub), "--all", "--by", "ana", "--reason", "ok"])
    assert ok.exit_code == 0, ok.output
    assert files(hub) != before


def test_status_json_lists_the_cluster_and_promote_by_id_makes_it_global(hub: Path) -> None:
    status = CliRunner().invoke(main, ["federate", "status", "--hub", str(hub), "--json"])
    assert status.exit_code == 0, status.output
    [cluster] = json.loads(status.output)["clusters"]
    assert cluster["projects"] == ["airline", "retail", "telecom"] and cluster["promotable"]
    assert cluster["status"] == "candidate" and cluster["contradicting"] == []
    args = ["federate", "promote", "--hub", str(hub), "--cluster", cluster["id"], "--by", "ana", "--reason", "ok"]
    assert CliRunner().invoke(main, args).exit_code == 0
    after = json.loads(CliRunner().invoke(main, ["federate", "status", "--hub", str(hub), "--json"]).output)
    assert [c["status"] for c in after["clusters"]] == ["global"]
    again = CliRunner().invoke(main, args)  # the cluster is global now: not promotable twice
    assert again.exit_code == 2 and "not promotable" in again.output


def test_a_repush_of_the_same_file_changes_nothing(hub: Path, tmp_path: Path) -> None:
    before = (hub / "contributions" / "retail.json").read_bytes()
    book = tmp_path / "retail" / "skillbook.json"
    result = CliRunner().invoke(main, ["federate", "push", str(book), "--project", "retail", "--hub", str(hub)])
    assert result.output == "retail: 1 eligible, 0 contradicting (unchanged)\n"
    assert (hub / "contributions" / "retail.json").read_bytes() == before


def test_the_hub_comes_from_the_environment_or_the_config_file(
    hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACE_FEDERATION_HUB", str(hub))
    assert CliRunner().invoke(main, ["federate", "status", "--json"]).exit_code == 0
    monkeypatch.delenv("ACE_FEDERATION_HUB")
    monkeypatch.chdir(tmp_path)
    missing = CliRunner().invoke(main, ["federate", "status"])
    assert missing.exit_code == 2 and "--hub PATH" in missing.output
    (tmp_path / "ace-eval.toml").write_text('[federation]\nhub = "hub"\n')
    assert CliRunner().invoke(main, ["federate", "status", "--json"]).exit_code == 0
    nohub = CliRunner().invoke(main, ["federate", "status", "--hub", str(tmp_path / "nothing")])
    assert nohub.exit_code == 2 and "not a federation hub" in nohub.output


def test_revoke_is_checked_against_the_revokers_and_quarantines_the_global_skill(hub: Path) -> None:
    (hub / "policy.toml").write_text('promoters = ["*"]\nrevokers = ["ana"]\n')
    ok = CliRunner().invoke(main, ["federate", "promote", "--hub", str(hub), "--all", "--by", "bob", "--reason", "ok"])
    assert ok.exit_code == 0, ok.output
    [gid] = ok.output.split(": ", 1)[1].split()
    before = files(hub)
    args = ["federate", "revoke", "--hub", str(hub), "--global-id", gid, "--reason", "wrong"]
    refused = CliRunner().invoke(main, [*args, "--by", "bob"])
    assert refused.exit_code == 2 and "'bob' may not revoke" in refused.output
    assert files(hub) == before
    assert CliRunner().invoke(main, [*args, "--by", "ana"]).exit_code == 0
    status = json.loads(CliRunner().invoke(main, ["federate", "status", "--hub", str(hub), "--json"]).output)
    assert [c["status"] for c in status["clusters"]] == ["quarantined"]
