"""e2e settings: flag > environment variable > config file > the embedded default; every refusal names its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from ace_eval.e2e.config import (
    ConfigError,
    E2ESettings,
    ignored_flags_note,
    inapplicable_settings,
    resolve_settings,
)
from ace_eval.run.folder import RunFolder, RunFolderError, config_differences, new_run_id
from ace_eval.run.record import RunConfig, RunRecord


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_the_embedded_local_model(tmp_path: Path) -> None:
    settings = resolve_settings({}, environ={}, cwd=tmp_path)
    assert settings.models == {
        "agent": "local",
        "reflector": "local",
        "skill_manager": "local",
        "user": "local",
        "embedding": "local",
    }
    assert (settings.reflector_type, settings.epochs, settings.max_workers) == ("simple", 1, 1)
    assert settings.output_dir == Path("results/e2e") and settings.config_file is None
    assert settings.source_of("agent_model") == "default"


def test_flag_beats_env_beats_config_file(tmp_path: Path) -> None:
    write_config(
        tmp_path / "ace-eval.toml",
        '[models]\nagent = "from-file-agent"\nreflector = "from-file-reflector"\nuser = "from-file-user"\n'
        '[e2e]\nepochs = 3\ndata_dir = "data/airline"\n',
    )
    env = {"ACE_REFLECTOR_MODEL": "env-reflector", "ACE_AGENT_MODEL": "env-agent", "ACE_MODEL": "env-any"}
    settings = resolve_settings({"agent_model": "flag-agent"}, environ=env, cwd=tmp_path)
    assert settings.agent_model == "flag-agent" and settings.source_of("agent_model") == "flag"
    assert settings.reflector_model == "env-reflector" and settings.source_of("reflector_model").startswith("env:")
    # ACE_MODEL is the fallback of every LLM role, and it beats the file
    assert settings.user_model == "env-any" and settings.source_of("user_model") == "env:ACE_MODEL"
    assert settings.skill_manager_model == "env-any"
    assert settings.embedding_model == "local"  # ACE_MODEL does not name an embedding model
    assert settings.epochs == 3 and settings.source_of("epochs") == f"config:{tmp_path / 'ace-eval.toml'}"
    assert settings.data_dir == tmp_path / "data/airline"  # relative to the config file


def test_config_file_is_used_without_env(tmp_path: Path) -> None:
    path = write_config(tmp_path / "my.toml", '[models]\nskill_manager = "openai/gpt-4.1-mini"\nembedding = "x"\n')
    settings = resolve_settings({}, environ={}, config=path, cwd=tmp_path)
    assert settings.skill_manager_model == "openai/gpt-4.1-mini" and settings.embedding_model == "x"
    assert settings.config_file == path


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[models\nagent = 1", "not valid TOML"),
        ('[models]\nagnet = "x"\n', "field 'models.agnet'"),
        ("[e2e]\nepochs = 0\n", "field 'e2e.epochs'"),
        ('[e2e]\nreflector_type = "deep"\n', "field 'e2e.reflector_type'"),
        ("[other]\nx = 1\n", "field 'other'"),
    ],
)
def test_bad_config_file_is_refused_with_the_field(tmp_path: Path, text: str, match: str) -> None:
    path = write_config(tmp_path / "bad.toml", text)
    with pytest.raises(ConfigError, match=match) as info:
        resolve_settings({}, environ={}, config=path, cwd=tmp_path)
    assert str(path) in str(info.value)


def test_missing_config_file_and_bad_env_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist: fix the --config path"):
        resolve_settings({}, environ={}, config=tmp_path / "nope.toml", cwd=tmp_path)
    with pytest.raises(ConfigError, match="ACE_E2E_MAX_WORKERS='many' is not a valid value"):
        resolve_settings({}, environ={"ACE_E2E_MAX_WORKERS": "many"}, cwd=tmp_path)
    with pytest.raises(
        ConfigError, match=r"reflector_type must be 'simple', 'rr' or 'grounded'.*env:ACE_REFLECTOR_TYPE"
    ):
        resolve_settings({}, environ={"ACE_REFLECTOR_TYPE": "deep"}, cwd=tmp_path)
    assert resolve_settings({}, environ={"ACE_E2E_MAX_WORKERS": "4"}, cwd=tmp_path).max_workers == 4


def test_settings_round_trip_through_run_json(tmp_path: Path) -> None:
    settings = resolve_settings(
        {"traces": tmp_path / "c", "seed": 7, "no_benchmark": True}, environ={"ACE_USER_MODEL": "u"}, cwd=tmp_path
    )
    again = E2ESettings.from_dict(settings.to_dict())
    assert again == settings
    assert not again.runs_agent and E2ESettings().runs_agent


def test_run_ids_and_folders(tmp_path: Path) -> None:
    ids = {new_run_id() for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 16 and i.startswith("run_") for i in ids)
    folder = RunFolder.create(tmp_path / "results" / "e2e")
    assert folder.has_standard_name and folder.path.is_dir() and folder.run_id == folder.path.name
    RunRecord.of({"config": {"epochs": 1}, "status": "running"}).write(folder.run_json)
    assert RunFolder.open(folder.path).read_record().status == "running"
    with pytest.raises(RunFolderError, match=r"is not a run folder \(it has no run.json"):
        RunFolder.open(tmp_path)
    folder.run_json.write_text("{torn", encoding="utf-8")
    with pytest.raises(RunFolderError, match="cannot be read"):
        folder.read_record()


def test_every_setting_has_its_typed_field_in_run_json() -> None:
    """`run.json`'s `config` is `E2ESettings.to_dict()` checked by `RunConfig` (which has no other field than the
    replayed traces' digest): a new setting without its field could not be written."""
    assert set(RunConfig.model_fields) == {*E2ESettings().to_dict(), "traces_sha256"}
    settings = E2ESettings(steps={"deduplicate": {"threshold": 0.9}}, no_steps=("export_markdown",), seed=3)
    config = RunConfig.model_validate({**settings.to_dict(), "traces_sha256": None})
    assert E2ESettings.from_dict(config.as_dict()) == settings


def test_config_differences_name_what_matters() -> None:
    stored = {"traces": "c", "no_benchmark": True, "epochs": 2, "reflector_model": "a", "agent_model": "x"}
    assert config_differences(stored, {"epochs": 2, "max_workers": 4, "agent_model": "y"}) == []
    assert config_differences(stored, {"epochs": 3, "reflector_model": "b"}) == [
        "reflector_model: 'a' in the run, 'b' now",
        "epochs: 2 in the run, 3 now",
    ]
    # the agent's model matters once the agent runs
    assert config_differences({**stored, "no_benchmark": False}, {"agent_model": "y"}) == [
        "agent_model: 'x' in the run, 'y' now"
    ]


def test_skill_injection_and_top_k_resolve_and_are_checked(tmp_path: Path) -> None:
    assert (resolve_settings({}, environ={}, cwd=tmp_path).skill_injection, E2ESettings().top_k) == ("prompt", 5)
    write_config(tmp_path / "ace-eval.toml", '[e2e]\nskill_injection = "top-k"\ntop_k = 3\n')
    settings = resolve_settings({}, environ={}, cwd=tmp_path)
    assert (settings.skill_injection, settings.top_k) == ("top-k", 3)
    assert resolve_settings({"skill_injection": "none"}, environ={}, cwd=tmp_path).skill_injection == "none"
    with pytest.raises(ConfigError, match="skill_injection must be one of prompt, top-k, none"):
        E2ESettings(skill_injection="all")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="top_k must be at least 1"):
        E2ESettings(top_k=0)
    stored = {"skill_injection": "prompt", "traces": None, "no_benchmark": False}
    assert config_differences(stored, {"skill_injection": "top-k"}) == [
        "skill_injection: 'prompt' in the run, 'top-k' now"
    ]


def test_sm_sessions_resolve_and_are_checked(tmp_path: Path) -> None:
    assert resolve_settings({}, environ={}, cwd=tmp_path).sm_sessions == "concurrent"
    write_config(tmp_path / "ace-eval.toml", '[e2e]\nsm_sessions = "ordered"\n')
    settings = resolve_settings({}, environ={}, cwd=tmp_path)
    assert settings.sm_sessions == "ordered" and settings.source_of("sm_sessions").startswith("config:")
    assert resolve_settings({"sm_sessions": "concurrent"}, environ={}, cwd=tmp_path).sm_sessions == "concurrent"
    with pytest.raises(
        ConfigError, match="sm_sessions must be 'concurrent' or 'ordered', got 'parallel' \\(default\\)"
    ):
        E2ESettings(sm_sessions="parallel")  # type: ignore[arg-type]
    write_config(tmp_path / "ace-eval.toml", '[e2e]\nsm_sessions = "parallel"\n')
    with pytest.raises(ConfigError, match=r"field 'e2e\.sm_sessions'"):
        resolve_settings({}, environ={}, cwd=tmp_path)
    # changing it on --resume is allowed: like max_workers, it changes how, not what, the run learns from
    assert (
        config_differences(
            {"sm_sessions": "ordered", "traces": None, "no_benchmark": True}, {"sm_sessions": "concurrent"}
        )
        == []
    )


def test_flags_that_would_have_no_effect_are_named_in_one_note_not_refused(tmp_path: Path) -> None:
    replay = {"traces": tmp_path / "c", "no_benchmark": True}
    settings = resolve_settings(
        {**replay, "agent_model": "a", "max_num_steps": 50, "top_k": 3}, environ={}, cwd=tmp_path
    )
    assert settings.agent_model == "a" and settings.source_of("agent_model") == "flag"  # resolved, then ignored
    assert ignored_flags_note(settings) == (
        "note: flags with no effect on this run, ignored (--agent-model, --max-num-steps: no agent runs with --traces "
        "(and no --benchmark); --top-k: the learned skillbook is not evaluated with --no-benchmark)"
    )
    data_dir = resolve_settings({**replay, "data_dir": tmp_path}, environ={}, cwd=tmp_path)
    assert "--data-dir: no agent runs" in str(ignored_flags_note(data_dir))
    top_k = resolve_settings({"top_k": 3}, environ={}, cwd=tmp_path)
    assert "--top-k: it applies only with --skill-injection top-k" in str(ignored_flags_note(top_k))
    # the agent runs (to collect, or to evaluate a replayed collection): its flags apply, no note
    for flags in (
        {"agent_model": "a", "num_trials": 2},
        {"traces": tmp_path / "c", "benchmark": "tau-bench-airline", "user_model": "u"},
    ):
        applied = resolve_settings(flags, environ={}, cwd=tmp_path)
        assert applied.source_of(next(iter(flags))) == "flag" and ignored_flags_note(applied) is None
    assert resolve_settings({"skill_injection": "top-k", "top_k": 3}, environ={}, cwd=tmp_path).top_k == 3


def test_environment_and_config_values_that_do_not_apply_are_not_refused(tmp_path: Path) -> None:
    write_config(tmp_path / "ace-eval.toml", '[models]\nagent = "a"\n[e2e]\nnum_trials = 3\ntop_k = 2\n')
    env = {"ACE_MODEL": "m", "ACE_TAU_BENCH_DATA": str(tmp_path)}
    settings = resolve_settings({"traces": tmp_path / "c", "no_benchmark": True}, environ=env, cwd=tmp_path)
    assert set(inapplicable_settings(settings)) == {
        "agent_model",
        "user_model",
        "num_trials",
        "max_num_steps",
        "data_dir",
        "skill_injection",
        "top_k",
        "skill_tokens",
    }
    assert settings.source_of("agent_model") == "env:ACE_MODEL" and settings.num_trials == 3
    assert ignored_flags_note(settings) is None  # shared defaults, not flags: no note


def test_fail_fast_settings_resolve_and_are_checked(tmp_path: Path) -> None:
    defaults = resolve_settings({}, environ={}, cwd=tmp_path)
    assert (defaults.abort_after, defaults.retry_failed, defaults.no_preflight) == (3, True, False)
    (tmp_path / "ace-eval.toml").write_text("[e2e]\nabort_after = 5\n", encoding="utf-8")
    assert resolve_settings({}, environ={}, cwd=tmp_path).abort_after == 5
    assert resolve_settings({}, environ={"ACE_E2E_ABORT_AFTER": "0"}, cwd=tmp_path).abort_after == 0
    flags = {"abort_after": 1, "retry_failed": False, "no_preflight": True}
    settings = resolve_settings(flags, environ={}, cwd=tmp_path)
    assert (settings.abort_after, settings.retry_failed, settings.no_preflight) == (1, False, True)
    with pytest.raises(ConfigError, match="abort_after must be 0 or more"):
        E2ESettings(abort_after=-1)


def test_traces_alone_replays_and_the_benchmark_runs_only_when_named(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    alone = resolve_settings({"traces": tmp_path / "c"}, environ={}, cwd=tmp_path)
    assert alone.no_benchmark and not alone.runs_agent
    assert alone.source_of("no_benchmark") == "default: --traces without --benchmark"
    named = resolve_settings({"traces": tmp_path / "c", "benchmark": "tau-bench-airline"}, environ={}, cwd=tmp_path)
    assert not named.no_benchmark and named.runs_agent
    assert not resolve_settings({}, environ={}, cwd=tmp_path).no_benchmark  # no traces: the agent collects them
    both = {"traces": tmp_path / "c", "benchmark": "tau-bench-airline", "no_benchmark": True}
    assert resolve_settings(both, environ={}, cwd=tmp_path).no_benchmark  # --no-benchmark wins
    folder_format = resolve_settings({"traces": tmp_path / "c", "traces_format": "otel"}, environ={}, cwd=tmp_path)
    assert "--format: it names the format of a --traces file" in str(ignored_flags_note(folder_format))


def test_profile_settings_come_from_flags_or_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "ace-eval.toml").write_text("[e2e]\nreflector_retries = 3\nsm_request_limit = 4\n")
    settings = resolve_settings({"max_output_tokens": 128}, environ={}, cwd=tmp_path)
    assert (settings.reflector_retries, settings.sm_request_limit, settings.max_output_tokens) == (3, 4, 128)
    with pytest.raises(ConfigError, match="max_output_tokens must be at least 1, got 0"):
        resolve_settings({"max_output_tokens": 0}, environ={}, cwd=tmp_path)
