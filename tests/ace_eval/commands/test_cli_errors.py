"""Every error path of `ace-eval`: the message it prints, its exit status (2: a user error, 1: a failed run or a
full disk, 130: interrupted), and never a traceback.

Each case builds its input in `tmp_path` and returns the command line; the run-failure cases script the models
(no network). The table is the list the acceptance of issue 16 refers to.
"""

from __future__ import annotations

import errno
import functools
import json
import shutil
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from _plugins import install_distribution
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.core import serialization, storage
from ace.llm.litellm_model import import_litellm
from ace_eval.benchmarks.tau_bench import fetch
from ace_eval.cli import main
from ace_eval.e2e import runner

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"

Setup = Callable[[Path, pytest.MonkeyPatch], list[str]]


@dataclass(frozen=True)
class Case:
    """One error path: how to provoke it, the exit status, and what the message must say."""

    name: str
    setup: Setup
    exit_code: int
    says: tuple[str, ...]


def _offline(monkeypatch: pytest.MonkeyPatch, injections: runner.RunInjections | None = None) -> None:
    """`ace-eval e2e` on scripted models and the test embedder (nothing leaves the machine)."""
    inj = injections or scripted_injections()
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=inj))
    monkeypatch.setattr("ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=inj))
    for var in ("ACE_MODEL", "ACE_E2E_OUTPUT_DIR", "LOGFIRE_TOKEN", "LOGFIRE_CREDENTIALS_DIR"):
        monkeypatch.delenv(var, raising=False)


def _replay(tmp: Path, *flags: str) -> list[str]:
    return ["e2e", "--traces", str(DEMO), "--no-benchmark", "--limit", "2", "--output-dir", str(tmp / "out"), *flags]


def _collection(tmp: Path, trace: dict[str, object]) -> Path:
    """A collection folder of the demo's manifest and one hand-written trace line."""
    folder = tmp / "bad-collection"
    folder.mkdir()
    (folder / "manifest.json").write_text((DEMO / "manifest.json").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "traces.jsonl").write_text(json.dumps(trace) + "\n", encoding="utf-8")
    return folder


def _demo_trace() -> dict[str, object]:
    line = (DEMO / "traces.jsonl").read_text(encoding="utf-8").splitlines()[0]
    trace: dict[str, object] = json.loads(line)
    return trace


# ------------------------------------------------------------------------------------------------ user errors
def unknown_step(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    return _replay(tmp, "--step", "dedupe")


def step_option(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    return _replay(tmp, "--step", "deduplicate:threshold=high")


def pipeline_order(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    return _replay(tmp, "--no-step", "reflect")


def contradicting_flags(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    """Flags asking for opposite things are refused (a flag with no effect is only a note)."""
    _offline(mp)
    return _replay(tmp, "--agent-model", "openai/gpt-4.1-mini", "--step", "redact", "--no-redact")


def broken_config(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / "bad.toml").write_text("[e2e\nepochs = 2\n", encoding="utf-8")
    return _replay(tmp, "--config", str(tmp / "bad.toml"))


def config_value(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / "bad.toml").write_text("[e2e]\nepochs = 'two'\n", encoding="utf-8")
    return _replay(tmp, "--config", str(tmp / "bad.toml"))


def redaction_pattern(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / "bad.toml").write_text("[redaction.patterns]\nticket = '(unclosed'\n", encoding="utf-8")
    return _replay(tmp, "--config", str(tmp / "bad.toml"))


def not_a_collection(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / "empty").mkdir()
    return ["e2e", "--traces", str(tmp / "empty"), "--no-benchmark", "--output-dir", str(tmp / "out")]


def message_shape(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    trace = _demo_trace()
    trace["messages"] = [{"content": "hello, I need to change my flight"}]  # no role
    folder = _collection(tmp, trace)
    return ["e2e", "--traces", str(folder), "--no-benchmark", "--output-dir", str(tmp / "out")]


def trace_json(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    folder = _collection(tmp, _demo_trace())
    with (folder / "traces.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"trace_uid": "x", "messages": [\n{"no": "json"\n')
    return ["e2e", "--traces", str(folder), "--no-benchmark", "--output-dir", str(tmp / "out")]


def unknown_model_provider(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp, runner.RunInjections(embedder=scripted_injections().embedder, show_progress=False))
    return _replay(tmp, "--reflector-model", "foo/bar", "--skill-manager-model", "test")


def misspelt_local(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp, runner.RunInjections(embedder=scripted_injections().embedder, show_progress=False))
    return _replay(tmp, "--reflector-model", "lcoal", "--skill-manager-model", "test")


def misspelt_hosted(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    """No key and a typo: the typo is named (offline, from litellm's model list), not the missing key."""
    _offline(mp, runner.RunInjections(embedder=scripted_injections().embedder, show_progress=False))
    mp.delenv("OPENAI_API_KEY", raising=False)
    return _replay(tmp, "--reflector-model", "openai/gpt-4.1-mnii", "--skill-manager-model", "test")


def provider_unreachable(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    """A key but no network: litellm wraps the failed connection in a 500; the preflight stops with exit 2."""
    litellm = import_litellm()

    async def no_network(*args: object, **kwargs: object) -> object:
        raise litellm.InternalServerError(
            message="OpenAIException - Connection error.", llm_provider="openai", model="gpt-4.1-mini"
        )

    mp.setenv("OPENAI_API_KEY", "sk-test")
    mp.setattr(litellm, "acompletion", no_network)
    mp.setattr("pydantic_ai.models.ALLOW_MODEL_REQUESTS", True)  # acompletion itself is replaced: nothing leaves
    _offline(mp, runner.RunInjections(embedder=scripted_injections().embedder, show_progress=False))
    return _replay(tmp, "--reflector-model", "openai/gpt-4.1-mini", "--skill-manager-model", "test")


def logfire_credentials(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / ".logfire").mkdir()
    (tmp / ".logfire" / "logfire_credentials.json").write_text('{"token": ', encoding="utf-8")
    return _replay(tmp, "--logfire")


def resume_not_a_run(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / "nothing").mkdir()
    (tmp / "nothing" / "run.json").write_text("{}", encoding="utf-8")
    return ["e2e", "--resume", str(tmp / "nothing")]


def resume_damaged_run_json(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / "run").mkdir()
    (tmp / "run" / "run.json").write_text('{"config": ', encoding="utf-8")
    return ["e2e", "--resume", str(tmp / "run")]


def collection_stats(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "empty").mkdir()
    return ["collection", "stats", str(tmp / "empty")]


def collection_import_over_a_collection(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    src = tmp / "src.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8")
    return ["collection", "import", "--format", "openai-jsonl", str(src), "--out", str(DEMO)]


def collection_repair(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "empty").mkdir()
    return ["collection", "repair", str(tmp / "empty")]


def collection_import_bad_json(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "runs.json").write_text("{nope", encoding="utf-8")
    return ["collection", "import", "--format", "tau-bench", str(tmp / "runs.json"), "--out", str(tmp / "out")]


def collection_import_model_flag(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    src = str(DEMO / "traces.jsonl")
    return ["collection", "import", "--format", "openai-jsonl", src, "--out", str(tmp / "out"), "--model", "agent"]


def resume_missing_folder(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    return ["e2e", "--resume", str(tmp / "gone")]


def bad_flag_value(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    return _replay(tmp, "--epochs", "0")


def verify_missing_folder(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    return ["verify", str(tmp / "gone")]


def inspect_not_a_run(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "empty").mkdir()
    return ["inspect", str(tmp / "empty")]


def inspect_unknown_trace(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    run = tmp / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"status": "completed"}), encoding="utf-8")
    (run / "samples.jsonl").write_text("", encoding="utf-8")
    return ["inspect", str(run), "--trace", "demo-airline:0001"]


def verify_damaged_skillbook(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "run").mkdir()
    (tmp / "run" / "run.json").write_text(json.dumps({"status": "completed"}), encoding="utf-8")
    (tmp / "run" / "skillbook.json").write_text('{"schema_version": "2", "skills": [', encoding="utf-8")
    return ["verify", str(tmp / "run")]


def inspect_no_span(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "run").mkdir()
    (tmp / "run" / "run.json").write_text(json.dumps({"status": "running"}), encoding="utf-8")
    (tmp / "run" / "spans.jsonl").write_text("", encoding="utf-8")
    return ["inspect", str(tmp / "run")]


def scan_malformed_collection(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    shutil.copytree(DEMO, tmp / "c")
    lines = (tmp / "c" / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp / "c" / "traces.jsonl").write_text("\n".join([lines[0], *lines]) + "\n", encoding="utf-8")
    return ["scan", str(tmp / "c")]


def scan_missing_path(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    return ["scan", str(tmp / "missing")]


def scan_bad_config(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "bad.toml").write_text("[redaction.patterns]\nticket = '(unclosed'\n", encoding="utf-8")
    return ["scan", str(DEMO), "--config", str(tmp / "bad.toml")]


def benchmark_data_folder(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "data").mkdir()
    return ["benchmark", "check", "tau-bench-airline", "--data-dir", str(tmp / "data")]


def demo_not_a_collection(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "empty").mkdir()
    return ["demo", "--traces", str(tmp / "empty"), "--output-dir", str(tmp / "out")]


def broken_plugin(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    site = tmp / "site"
    site.mkdir()
    (site / "ace_broken_step.py").write_text('raise ImportError("needs libfoo.so")\n', encoding="utf-8")
    install_distribution(site, mp, "ace-broken-step", "0.3.1", {"broken": "ace_broken_step:factory"})
    return ["steps", "list"]


# ------------------------------------------------------------------------------------------------ run failures
def every_sample_failed(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    def crash(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("the reflector crashed")

    inj = scripted_injections()
    models = {**inj.models, "reflector": FunctionModel(crash, model_name="crashing")}
    _offline(mp, runner.RunInjections(models=models, embedder=inj.embedder, show_progress=False))
    return _replay(tmp)


def disk_full(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    """The disk fills up while the run saves its skillbook: a write() fails with ENOSPC, naming no file."""
    _offline(mp)
    original = storage.atomic_write_many

    def full(files: list[tuple[str, storage.Writer]]) -> None:
        def refuse(f: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        original([(path, refuse if Path(path).name == "skillbook.json" else w) for path, w in files])

    mp.setattr(storage, "atomic_write_many", full)
    mp.setattr(serialization, "atomic_write_many", full)
    return _replay(tmp)


def read_only_output_dir(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    mp.setattr(Path, "mkdir", refuse)  # as a read-only folder does, also for root (who may write anywhere)
    return _replay(tmp)


def output_dir_under_a_file(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    _offline(mp)
    (tmp / "file").write_text("not a folder", encoding="utf-8")
    return _replay(tmp, "--output-dir", str(tmp / "file" / "out"))


def download_failed(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    def offline(url: str) -> bytes:
        raise urllib.error.URLError("no route to host")

    mp.setattr(fetch, "url_download", offline)
    return ["data", "fetch", "tau-bench", "--dest", str(tmp / "data")]


def tasks_not_a_list(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    """Upstream's tasks module is not the `TASKS = [Task(...)]` literal the converter reads (TasksSourceError)."""

    def serve(url: str) -> bytes:
        if url.endswith(".py"):
            return b"TASKS = load_tasks()\n"
        raise urllib.error.URLError("only the tasks file is served here")

    mp.setattr(fetch, "url_download", serve)
    mp.setattr(fetch, "AIRLINE_FILES", tuple(f for f in fetch.AIRLINE_FILES if f.from_python))
    return ["data", "fetch", "tau-bench", "--dest", str(tmp / "data")]


def interrupted(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    calls = {"n": 0}

    def ctrl_c(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        raise KeyboardInterrupt

    inj = scripted_injections()
    models = {**inj.models, "reflector": FunctionModel(ctrl_c, model_name="ctrl-c")}
    _offline(mp, runner.RunInjections(models=models, embedder=inj.embedder, show_progress=False))
    return _replay(tmp)


def report_not_a_run(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    return ["report", str(tmp), "-o", str(tmp / "r.html")]


def report_output_folder(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "run").mkdir()
    (tmp / "run" / "run.json").write_text('{"config": {}}', encoding="utf-8")
    return ["report", str(tmp / "run"), "-o", str(tmp)]


def report_output_parent(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    return ["report", str(tmp), "-o", str(tmp / "missing" / "r.html")]


def report_damaged_run(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "run").mkdir()
    (tmp / "run" / "run.json").write_text('{"config": {}, "usage": []}', encoding="utf-8")
    return ["report", str(tmp / "run")]


def runs_not_a_folder(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    return ["runs", str(tmp / "nowhere")]


def export_missing(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    return ["export", str(tmp / "skillbook.json")]


def export_not_a_skillbook(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "skillbook.json").write_text('{"hello": 1}', encoding="utf-8")
    return ["export", str(tmp / "skillbook.json")]


def export_onto_itself(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    (tmp / "book.md").write_text("{}", encoding="utf-8")
    return ["export", str(tmp / "book.md")]


RESUME = "continue it with: ace-eval e2e --resume "

CASES = [
    Case("unknown step", unknown_step, 2, ("unknown step 'dedupe'", "deduplicate")),
    Case("bad step option", step_option, 2, ("threshold",)),
    Case("pipeline order", pipeline_order, 2, ("step 'update' (position 1) requires ['reflections']",)),
    Case("contradicting flags", contradicting_flags, 2, ("the step 'redact' is asked for", "drop one of them")),
    Case("config file not TOML", broken_config, 2, ("bad.toml",)),
    Case("config value", config_value, 2, ("epochs",)),
    Case("redaction pattern", redaction_pattern, 2, ("(unclosed",)),
    Case("not a collection", not_a_collection, 2, ("manifest.json",)),
    Case("message shape", message_shape, 2, ("messages[0].role",)),
    Case("trace line not JSON", trace_json, 2, ("traces.jsonl", "line 2")),
    Case("unknown model provider", unknown_model_provider, 2, ("litellm does not know the provider of 'foo/bar'",)),
    Case("misspelt model", misspelt_local, 2, ("unknown model 'lcoal'", "--reflector-model", "did you mean 'local'?")),
    Case(
        "misspelt hosted model",
        misspelt_hosted,
        2,
        ("unknown model 'openai/gpt-4.1-mnii': did you mean 'openai/gpt-4.1-mini'?", "--reflector-model"),
    ),
    Case("provider unreachable", provider_unreachable, 2, ("could not reach the provider", "--no-preflight")),
    Case("logfire credentials", logfire_credentials, 2, ("Invalid credentials file", "fix or delete it")),
    Case("resume: not a run", resume_not_a_run, 2, ("has no 'config' object",)),
    Case("resume: damaged run.json", resume_damaged_run_json, 2, ("cannot be read", "damaged")),
    Case("collection stats: not a collection", collection_stats, 2, ("not a trace collection",)),
    Case("collection import over one", collection_import_over_a_collection, 2, ("already holds a trace collection",)),
    Case("collection repair: not a collection", collection_repair, 2, ("not a trace collection: no manifest.json",)),
    Case(
        "collection import: not JSON", collection_import_bad_json, 2, ("runs.json, line 1, column 2: not valid JSON",)
    ),
    Case("collection import: --model", collection_import_model_flag, 2, ("write ROLE=MODEL",)),
    Case("resume: no such folder", resume_missing_folder, 2, ("is not a run folder (the folder does not exist)",)),
    Case("flag out of range", bad_flag_value, 2, ("Invalid value for '--epochs'",)),
    Case("verify: no such folder", verify_missing_folder, 2, ("does not exist",)),
    Case("inspect: not a run", inspect_not_a_run, 2, ("is not a run folder (it has no run.json)",)),
    Case("inspect: unknown trace", inspect_unknown_trace, 2, ("no trace 'demo-airline:0001'",)),
    Case(
        "verify: damaged skillbook",
        verify_damaged_skillbook,
        2,
        ("skillbook.json cannot be read (line 1, column 36: malformed JSON",),
    ),
    Case("inspect: no span", inspect_no_span, 2, ("spans.jsonl: holds no span", "ace-eval e2e --resume")),
    Case("scan: malformed collection", scan_malformed_collection, 2, ("traces.jsonl, line 2: field 'trace_uid'",)),
    Case("scan: missing path", scan_missing_path, 2, ("does not exist: pass a collection folder",)),
    Case("scan: bad config", scan_bad_config, 2, ("(unclosed",)),
    Case("benchmark: data folder", benchmark_data_folder, 2, ("ace-eval data fetch tau-bench",)),
    Case("demo: not a collection", demo_not_a_collection, 2, ("manifest.json",)),
    Case("steps: broken plugin", broken_plugin, 2, ("ace-broken-step 0.3.1 failed to import", "needs libfoo.so")),
    Case("every sample failed", every_sample_failed, 1, ("every sample failed (2 of 2)", RESUME)),
    Case("disk full", disk_full, 1, ("no space left on the device", "skillbook.json", RESUME)),
    Case("output dir under a file", output_dir_under_a_file, 2, ("Not a directory: pass a folder path",)),
    Case("output dir read-only", read_only_output_dir, 2, ("cannot write", "make it writable")),
    Case("download failed", download_failed, 1, ("could not download", "check the connection and retry")),
    Case("tasks module", tasks_not_a_list, 1, ("cannot read the tasks", "TASKS must be a list literal")),
    Case("interrupted", interrupted, 130, ("interrupted", RESUME)),
    Case(
        "report: not a run folder", report_not_a_run, 2, ("is not a run folder (it has no run.json)", "ace-eval runs")
    ),
    Case("report: output is a folder", report_output_folder, 2, ("is a folder: pass a file name",)),
    Case("report: output folder missing", report_output_parent, 2, ("does not exist; create it first",)),
    Case("report: damaged run.json", report_damaged_run, 2, ("field 'usage'", "the run folder is damaged")),
    Case("runs: not a folder", runs_not_a_folder, 2, ("is not a folder: pass the folder holding your runs",)),
    Case("export: missing skillbook", export_missing, 2, ("is not a file: pass a skillbook",)),
    Case("export: not a skillbook", export_not_a_skillbook, 2, ("is not a skillbook", "skillbook.json written by ACE")),
    Case("export: onto itself", export_onto_itself, 2, ("is the skillbook itself",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_an_error_exits_with_its_status_and_message_and_no_traceback(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./ace-eval.toml, no .logfire/ but the case's own
    result = CliRunner().invoke(main, case.setup(tmp_path, monkeypatch))
    assert result.exit_code == case.exit_code, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # exited, did not crash
    assert "Traceback" not in result.output
    for text in case.says:
        assert text in result.output, result.output


def test_help_documents_the_exit_statuses() -> None:
    out = CliRunner().invoke(main, ["--help"]).output
    assert "Exit status:" in out
    for line in ("0    success", "1    a run failed", "2    a user error", "130  interrupted"):
        assert line in out, out


def test_an_unreachable_provider_writes_nothing_and_no_preflight_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = provider_unreachable(tmp_path, monkeypatch)
    assert CliRunner().invoke(main, args).exit_code == 2
    assert not (tmp_path / "out").exists()
    monkeypatch.setenv("ACE_REFLECTOR_MAX_RETRIES", "0")
    started = CliRunner().invoke(main, [*args, "--no-preflight", "--abort-after", "1"])
    assert "could not reach the provider" in started.output and (tmp_path / "out").exists()
