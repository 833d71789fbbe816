"""The loop of `ace-eval serve`, end to end: a real pydantic-ai agent (FunctionModel, no key) instrumented with
Logfire exports its spans through OpenTelemetry's own OTLP/HTTP exporter to `serve` (a process of its own on
127.0.0.1, learning with scripted models: `--models-from _serve_models:scripted`); `serve` learns and publishes a
version (ungated, or through the gate with a scorer); the same agent, through `SkillInstructions.from_url`, gets the
new skills on its next run without restarting. And kill -9 in the middle of learning under load loses no
acknowledged span and learns no trace twice."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import logfire
import pytest
from _otel_agent import support_agent
from _serve_helpers import agent_span, otlp_json, request, start_serve, wait_for
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.integrations.pydantic_ai import SkillInstructions
from ace_eval.run.samples import load_samples
from ace_eval.store import SkillbookStore

TOKEN = "acceptance-t0ken"
SCORER = """
def score(skillbook, task_ids, num_trials):
    reward = 1.0 if skillbook.skills() else 0.0
    return {task: [reward] * num_trials for task in task_ids}
"""


@contextmanager
def serve_process(
    store: Path, *args: str, env: dict[str, str] | None = None, said: list[str] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`serve` in its own process on 127.0.0.1 (a free port; what it said before listening goes to `said`); killed
    when the block leaves."""
    models = ["--models-from", "_serve_models:scripted"]
    process, base, seen = start_serve(
        [*models, "--store", str(store), "--port", "0", "--feedback-wait", "0", *args], env
    )
    try:
        assert base is not None, seen
        if said is not None:
            said.append(seen)
        assert process.stderr is not None
        threading.Thread(target=process.stderr.read, daemon=True).start()  # drain the rest
        yield process, base
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def status(base: str) -> dict[str, Any]:
    code, _, body = request(f"{base}/v1/status", headers={"Authorization": f"Bearer {TOKEN}"})
    assert code == 200, body
    return json.loads(body)


class SupportModel:
    """Refunds the order named last in the prompt, then reports; remembers the instructions of each run."""

    def __init__(self) -> None:
        self.instructions: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"Done: {last.content}.")])
        self.instructions.append(info.instructions or "")
        order = str(messages[0].parts[-1].content).rstrip("?.").split()[-1]
        return ModelResponse(parts=[ToolCallPart("issue_refund", {"order_id": order}, tool_call_id=f"call-{order}")])


def agent_with_served_skills(base: str, model: SupportModel) -> Agent[None, str]:
    """`_otel_agent.support_agent` on `model`, with the skills `serve` serves in its instructions."""
    agent = support_agent(FunctionModel(model))
    agent.instructions(
        SkillInstructions.from_url(base, token=TOKEN, poll_seconds=0, timeout=2.0, embedder=TestEmbedder())
    )
    return agent


@pytest.mark.parametrize("gated", [False, True], ids=["no-gate", "scorer-gate"])
def test_an_instrumented_agent_gets_the_learned_skills_without_a_restart(
    tmp_path: Path, gated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    (tmp_path / "acceptance_scorer.py").write_text(textwrap.dedent(SCORER), encoding="utf-8")
    publish = ["--scorer", "acceptance_scorer:score", "--tasks", "t1,t2,t3,t4,t5,t6"] if gated else ["--no-gate"]
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    args = ["--token", TOKEN, "--learn-every", "10", "--publish-every", "20", *publish]
    with serve_process(store, *args, env=env) as (_, base):
        exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"})
        instance = logfire.configure(
            local=True,
            send_to_logfire=False,
            console=False,
            scrubbing=False,
            additional_span_processors=[SimpleSpanProcessor(exporter)],
        )
        model = SupportModel()
        agent = agent_with_served_skills(base, model)
        instance.instrument_pydantic_ai(agent)
        for n in range(20):
            with contextlib.suppress(Exception):  # a failed run is a trace too (the tool's error is its feedback)
                agent.run_sync(f"Please refund order A{100 + n % 4}")
        instance.force_flush()
        assert not any("<lesson" in seen for seen in model.instructions)  # nothing learned yet
        wait_for(lambda: status(base)["version"] == 1, seconds=180)
        done = status(base)
        assert done["spans_acknowledged"] > 0 and done["traces_learned"] == 20
        agent.run_sync("Please refund order A100")  # the same agent object, its process never restarted
        assert "<lesson" in model.instructions[-1]
        instance.shutdown()
    (version,) = SkillbookStore(store).versions()
    assert version.produced_by.kind == "serve"
    if gated:
        assert version.gate is not None and version.gate["decision"] == "promote"
    else:
        assert version.gate is None and "--no-gate" in (version.ungated_reason or "")
    learned = [json.loads(line) for line in (store / "serve" / "learned.jsonl").read_text().splitlines()]
    assert [len(line["trace_uids"]) for line in learned] == [10, 10]


def _load(base: str, acked: list[int], stop: threading.Event, worker: int) -> None:
    """Requests of 3 spans (one agent run each) until stopped or the server is gone; count the acknowledged."""
    for n in range(400):
        if stop.is_set():
            return
        spans = [
            agent_span("1" * 16),
            *({"spanId": f"{i + 2:016x}", "name": "child", "parentSpanId": "1" * 16} for i in range(2)),
        ]
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
        try:
            code, _, _ = request(f"{base}/v1/traces", otlp_json(f"{worker:08x}{n:024x}", spans), headers)
        except OSError:
            return
        if code == 200:
            acked.append(3)
        time.sleep(0.02)


def test_without_a_gate_or_no_gate_a_note_says_nothing_is_published(tmp_path: Path) -> None:
    said: list[str] = []
    with serve_process(tmp_path / "store", "--token", TOKEN, said=said) as (_, base):
        assert status(base)["publishing"] is None
    assert said[0].count("note: learned skillbooks will not be published") == 1
    assert "--no-gate to publish them ungated" in said[0]


def test_kill_9_while_learning_under_load_learns_no_trace_twice(tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = ["--token", TOKEN, "--learn-every", "5", "--no-gate", "--publish-every", "10"]
    acked: list[int] = []
    stop = threading.Event()
    learning = store / "serve" / "learning"
    with serve_process(store, *args, env={"ACE_TEST_SM_DELAY": "0.2"}) as (process, base):
        loaders = [threading.Thread(target=_load, args=(base, acked, stop, w)) for w in range(2)]
        for loader in loaders:
            loader.start()
        # in the middle of a batch: its run has journaled a sample and not finished
        wait_for(lambda: any(len(load_samples(p)) >= 2 for p in learning.glob("*/run_*/samples.jsonl")), seconds=120)
        process.kill()
        process.wait(timeout=30)
        stop.set()
        for loader in loaders:
            loader.join(timeout=30)
    seen_by_client = sum(acked)
    with serve_process(store, *args) as (_, base):
        after = status(base)
        assert after["spans_acknowledged"] >= seen_by_client
        ready = after["traces_ready"]
        wait_for(lambda: status(base)["traces_learned"] >= ready - ready % 5 > 0, seconds=180)
        wait_for(lambda: status(base)["learning_batch"] is None, seconds=60)
    learned = [json.loads(line) for line in (store / "serve" / "learned.jsonl").read_text().splitlines()]
    uids = [uid for line in learned for uid in line["trace_uids"]]
    assert len(uids) == len(set(uids))  # each trace in one batch
    by_trace: Counter[str] = Counter()
    for line in learned:
        samples = load_samples(Path(line["run_dir"]) / "samples.jsonl")
        assert sorted(s.trace_uid for s in samples) == sorted(line["trace_uids"])  # one sample each, none rerun
        by_trace.update({s.trace_uid: len(s.operations) for s in samples})
    book = Skillbook.load_from_file(learned[-1]["skillbook"])
    provenance = Counter(o.trace_uid for skill in book.skills(include_inactive=True) for o in skill.occurrences)
    assert provenance == +by_trace  # every edit in the skillbook once, from the sample that made it
    segments = [json.loads((Path(line["run_dir"]) / "run.json").read_text())["segments"] for line in learned]
    assert any(len(s) == 2 for s in segments)  # the batch the kill cut was resumed, not started again


def test_sigterm_while_learning_stops_at_a_sample_exits_0_and_the_batch_resumes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = ["--token", TOKEN, "--learn-every", "5"]
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    with serve_process(store, *args, env={"ACE_TEST_SM_DELAY": "0.5"}) as (process, base):
        for n in range(5):
            assert request(f"{base}/v1/traces", otlp_json(f"{n + 1:032x}", [agent_span("1" * 16)]), headers)[0] == 200
        wait_for(lambda: any(load_samples(p) for p in store.glob("serve/learning/*/run_*/samples.jsonl")), seconds=120)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert time.monotonic() - started < 15  # at the end of the sample in flight, not of the batch
    (run_dir,) = store.glob("serve/learning/0001/run_*")
    first = json.loads((run_dir / "run.json").read_text())
    assert first["segments"][-1]["status"] == "interrupted" and len(load_samples(run_dir / "samples.jsonl")) < 5
    with serve_process(store, *args) as (_, base):
        wait_for(lambda: status(base)["traces_learned"] == 5, seconds=120)
    samples = load_samples(run_dir / "samples.jsonl")
    assert len(samples) == len({s.trace_uid for s in samples}) == 5  # the rest of the batch, nothing twice
    assert [s["status"] for s in json.loads((run_dir / "run.json").read_text())["segments"]] == [
        "interrupted",
        "completed",
    ]
