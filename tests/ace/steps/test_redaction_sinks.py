"""The redact step and the second line: the skillbook, the trainer's journal, the local spans and Logfire's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import logfire
from _ace_scripts import make_trace, scripted_roles
from logfire.testing import CaptureLogfire
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ace import InsightSource, Skillbook
from ace.core.redaction_sink import SAMPLE_QUESTION_MAX
from ace.observability import JsonlSpanExporter, ace_span, configure_observability, read_spans_jsonl
from ace.pipeline import StepContext
from ace.redaction import Redactor
from ace.redaction.scrubbing import scrubbing_options
from ace.steps import RedactStep
from ace_eval.e2e.training import Trainer, TrainingConfig

EMAIL = "olivia.martin@example-mail.com"
KEY = "AKIAQ3EGTN7PLMW4ZX2B"


def test_the_redact_step_returns_a_new_context_with_the_trace_redacted_and_counts() -> None:
    trace = {**make_trace(1, "refund"), "question": f"[refund] mail {EMAIL} twice: {EMAIL.upper()}"}
    ctx = StepContext(trace=trace, skillbook=Skillbook())
    out = asyncio.run(RedactStep()(ctx))
    assert out is not ctx and ctx.trace["question"] == trace["question"]
    assert out.trace["question"] == "[refund] mail [REDACTED:email#1] twice: [REDACTED:email#1]"
    assert (out.trace["trace_uid"], out.trace["trace_id"]) == (trace["trace_uid"], trace["trace_id"])
    assert dict(out.redactions) == {"email": 2}
    assert RedactStep.name == "redact" and RedactStep.provides == {"trace", "redactions"}


def test_the_trainer_redacts_first_by_default_and_only_then() -> None:
    traces = [
        {**make_trace(n, "refund"), "question": f"[refund] card 4111 1111 1111 1111 from {EMAIL}"} for n in (1, 2)
    ]
    reflector, manager = scripted_roles()
    result = Trainer(reflector=reflector, skill_manager=manager, config=TrainingConfig()).run(traces, Skillbook())
    assert [s.redactions for s in result.samples] == [{"card_number": 1, "email": 1}] * 2
    text = json.dumps(result.skillbook.to_dict())
    assert EMAIL not in text and "4111" not in text and "[REDACTED:email#1]" in text

    reflector, manager = scripted_roles()
    config = TrainingConfig(redact=False)
    raw = Trainer(reflector=reflector, skill_manager=manager, config=config).run(traces, Skillbook())
    assert [s.redactions for s in raw.samples] == [{}, {}] and EMAIL in json.dumps(raw.skillbook.to_dict())


def test_the_trainer_journal_is_redacted(tmp_path: Path) -> None:
    reflector, manager = scripted_roles()
    config = TrainingConfig(checkpoint_dir=tmp_path, redact=True)
    Trainer(reflector=reflector, skill_manager=manager, config=config).run([make_trace(1, "refund")], Skillbook())
    # a reflection that quotes a secret the step could not see (here: put into the journal line by hand)
    trainer = Trainer(reflector=reflector, skill_manager=manager, config=config)
    assert trainer.redactor is not None
    line = trainer.redactor.redact_data({"trace_uid": f"x:{EMAIL}", "reflection": f"quoted {KEY}"}, numbered=False)
    assert line[0]["reflection"] == "quoted [REDACTED:aws_access_key]"
    assert EMAIL not in (tmp_path / "samples.jsonl").read_text(encoding="utf-8")


def test_the_skillbook_stores_every_text_redacted_and_the_question_truncated() -> None:
    book = Skillbook()
    source = InsightSource(
        trace_uid="bot:t1",
        source_system="bot",
        trace_id="t1",
        sample_question=f"mail {EMAIL} " + "x" * 1000,
        error_identification=f"echoed {KEY}",
        learning_text=f"never echo {KEY}",
    )
    skill = book.add_skill("context", f"Agent echoed {EMAIL}", [EMAIL, "support"], f"Mask {KEY}", insight_source=source)
    book.update_skill(skill.id, f"Echoed {EMAIL} again", insight_source=source)
    book.remove_skill(skill.id, f"obsolete, see {EMAIL}")
    text = json.dumps(book.to_dict())
    assert EMAIL not in text and KEY not in text
    assert book.require_skill(skill.id).keywords == ["redacted_email", "support"]
    [occurrence, *_] = book.require_skill(skill.id).occurrences
    assert occurrence.sample_question is not None and len(occurrence.sample_question) == SAMPLE_QUESTION_MAX
    assert occurrence.sample_question.startswith("mail [REDACTED:email] xxx") and occurrence.sample_question[-1] == "…"
    assert occurrence.error_identification == "echoed [REDACTED:aws_access_key]"

    raw = Skillbook()
    raw.redactor = None
    assert raw.add_skill("context", f"Echoed {EMAIL}", ["support"], "Mask it").issue == f"Echoed {EMAIL}"


def test_the_local_span_file_holds_no_secret_even_in_exception_messages(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    obs = configure_observability(False, local_spans_path=path)
    try:
        try:
            with ace_span("sm.session", {"ace.note": f"user {EMAIL}", "ace.key": KEY}):
                raise ValueError(f"the model quoted {KEY}")
        except ValueError:
            pass
        obs.flush()
    finally:
        logfire.configure(send_to_logfire=False, console=False, inspect_arguments=False)
    text = path.read_text(encoding="utf-8")
    assert EMAIL not in text and KEY not in text
    [span] = read_spans_jsonl(path)
    assert span["attributes"]["ace.key"] == "[REDACTED:aws_access_key]"
    assert "[REDACTED:aws_access_key]" in span["status_description"]
    assert isinstance(JsonlSpanExporter(tmp_path / "raw.jsonl").redactor, type(None))


def test_logfire_scrubbing_redacts_values_that_are_wholly_a_secret(capfire: CaptureLogfire) -> None:
    options = scrubbing_options(Redactor())
    logfire.configure(
        send_to_logfire=False,
        console=False,
        scrubbing=options,
        additional_span_processors=[SimpleSpanProcessor(capfire.exporter)],
        inspect_arguments=False,
    )
    with logfire.span("prompt {kind}", kind="chat", email=EMAIL, prompt=f"my key is {KEY}", messages=[{"c": EMAIL}]):
        pass
    [span] = [s for s in capfire.exporter.exported_spans_as_dict() if s["name"] == "prompt {kind}"]
    attributes = json.dumps(span["attributes"])
    assert EMAIL not in attributes and KEY not in attributes
    assert span["attributes"]["email"] == "[REDACTED:email]"
    assert span["attributes"]["prompt"] == "my key is [REDACTED:aws_access_key]"


def test_an_ace_span_records_a_failure_without_the_secret_it_quotes(capfire: CaptureLogfire) -> None:
    try:
        with ace_span("sm.session", {}):
            raise ValueError(f"refused {KEY}")
    except ValueError:
        pass
    [span] = [s for s in capfire.exporter.exported_spans_as_dict() if s["name"] == "sm.session"]
    assert KEY not in json.dumps(span)
    assert span["events"][0]["attributes"]["exception.message"] == "refused [REDACTED:aws_access_key]"
