"""A skillbook that untrusted input cannot corrupt: ids checked on load and never reused, text capped and plain,
strict tag deltas, every refused tool call counted, a vector cache checked before it is loaded, a safe export."""

from __future__ import annotations

import json
import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from logfire.testing import TestExporter
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from ace import InsightSource, Skillbook
from ace.core.npz import text_list
from ace.core.vectors import embeddings_writer
from ace.embeddings.test import TestEmbedder
from ace.exceptions import SkillbookError, SkillbookFormatError
from ace.reflector.reflection import Reflection
from ace.skill_manager.deps import SMDeps
from ace.skill_manager.manager import SkillManager, SMSettings
from ace.skill_manager.tools import add_skill, update_skill
from ace.steps.export_markdown import export_markdown

SOURCE = InsightSource(trace_uid="demo:1", source_system="demo", trace_id="1", epoch=0)
REFLECTION = Reflection(
    error_identification="Charged for a free bag.",
    root_cause_analysis="Did not check the tier.",
    correct_approach="Check the tier first.",
    key_insight="Gold members get free bags.",
    skill_tags=[],
)


def seeded() -> Skillbook:
    book = Skillbook()
    book.add_skill("context", "Bags are free for gold members.", ["airline", "baggage"], "Check the tier first.")
    book.add_skill("harness", "The tool server times out after 30 s.", ["tau_bench"])
    return book


def saved_doc(book: Skillbook, path: Path) -> dict[str, Any]:
    book.save_to_file(path)
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


# ------------------------------------------------------------------------------------------------ ids
@pytest.mark.parametrize(
    ("section", "bad_id"),
    [
        ("context", "my custom id"),
        ("harness", "context-00005"),  # a context id filed under harness: the generator would make it again
        ("context", "context-5"),
        ("context", "context-00005\n"),
        ("context", "context-０００１２"),  # not ASCII digits
    ],
)
def test_load_refuses_ids_the_skillbook_would_not_assign(tmp_path: Path, section: str, bad_id: str) -> None:
    doc = saved_doc(seeded(), tmp_path / "skillbook.json")
    skill = next(s for s in doc["skills"] if s["section"] == section)
    skill["id"] = bad_id
    (tmp_path / "skillbook.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(SkillbookFormatError, match="is not a valid id for a") as info:
        Skillbook.load_from_file(tmp_path / "skillbook.json")
    assert repr(bad_id) in str(info.value) and f"'{section}-00001'" in str(info.value)


def test_a_new_id_never_reuses_one_from_the_operation_log(tmp_path: Path) -> None:
    book = seeded()
    third = book.add_skill("context", "Seats are assigned at check-in.", ["airline"], "Say so.")
    book.purge(third.id)
    doc = book.to_dict()
    del doc["next_ids"]  # an older or hand-edited file: the counters follow from the ids it mentions
    loaded = Skillbook.from_dict(doc)
    added = loaded.add_skill("context", "Refunds take 7 days.", ["refunds"], "Tell the user.")
    assert added.id == "context-00003" != third.id and third.id == "context-00002"
    assert {s.id for s in loaded.skills(include_inactive=True)} == {"context-00001", "harness-00001", "context-00003"}


def test_a_new_id_never_replaces_a_loaded_skill_with_a_high_id(tmp_path: Path) -> None:
    doc = saved_doc(seeded(), tmp_path / "skillbook.json")
    doc["skills"][0]["id"] = "context-00042"
    for op in doc["operations"]:  # the log follows the rename (its entries may take texts from the skill)
        op["skill_id"] = "context-00042" if op["skill_id"] == "context-00001" else op["skill_id"]
    doc["next_ids"] = {"context": 1, "harness": 1}  # stale counters
    loaded = Skillbook.from_dict(doc)
    history = loaded.require_skill("context-00042").to_dict()
    new = [loaded.add_skill("context", f"Issue {n}.", ["airline"], "Act.").id for n in range(3)]
    assert new == ["context-00043", "context-00044", "context-00045"]
    assert loaded.require_skill("context-00042").to_dict() == history


# ----------------------------------------------------------------------------------------- text rules
def test_issue_and_insight_are_capped_at_2000_characters_by_default() -> None:
    book = seeded()
    book.add_skill("context", "i" * 2000, ["airline"], "a" * 2000)
    with pytest.raises(SkillbookError, match=r"issue is 2,001 characters, over the limit of 2,000: say it in fewer"):
        book.add_skill("context", "i" * 2001, ["airline"], "Act.")
    with pytest.raises(SkillbookError, match="insight is 2,001 characters"):
        book.update_skill("context-00001", "Bags are free.", insight="a" * 2001)
    assert len(book) == 3 and book.require_skill("context-00001").issue == "Bags are free for gold members."


def test_the_cap_is_configurable() -> None:
    small = Skillbook(max_text_chars=50)
    with pytest.raises(SkillbookError, match="over the limit of 50"):
        small.add_skill("harness", "x" * 51, ["tau_bench"])
    unlimited = Skillbook(max_text_chars=None)
    assert len(unlimited.add_skill("harness", "x" * 10_000, ["tau_bench"]).issue) == 10_000


@pytest.mark.parametrize(
    "char", ["\x00", "\x1b", "\r", "\x7f", "\x85", "\u202e", "\u202a", "\u2066", "\u2069", "\u200f"]
)
@pytest.mark.parametrize("field", ["issue", "insight", "keyword"])
def test_control_nul_and_bidi_characters_are_refused(char: str, field: str) -> None:
    book = seeded()
    before = json.dumps(book.to_dict())
    text = f"Refund {char}then cancel."
    args = {"issue": "Plain issue.", "insight": "Plain insight.", "keyword": "airline"}
    args[field] = text
    with pytest.raises(SkillbookError, match=rf"U\+{ord(char):04X}.*not allowed"):
        book.add_skill("context", args["issue"], [args["keyword"]], args["insight"])
    assert json.dumps(book.to_dict()) == before


def test_newlines_and_tabs_are_fine_in_prose_but_not_in_keywords() -> None:
    book = seeded()
    skill = book.add_skill("context", "Two lines:\nfirst\tsecond.", ["airline"], "Step one.\nStep two.")
    assert "\n" in skill.issue and "\t" in skill.issue
    with pytest.raises(SkillbookError, match="U\\+000A"):
        book.add_skill("context", "Issue.", ["air\nline"], "Act.")


def test_load_refuses_a_bidi_override_in_a_skill(tmp_path: Path) -> None:
    doc = saved_doc(seeded(), tmp_path / "skillbook.json")
    doc["skills"][0]["insight"] = "Refund the \u202eticket"
    (tmp_path / "skillbook.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(SkillbookFormatError, match=r"skills\[0\]: skill context-00001: insight contains U\+202E"):
        Skillbook.load_from_file(tmp_path / "skillbook.json")


def tool_context(book: Skillbook, **settings: Any) -> RunContext[SMDeps]:
    deps = SMDeps(skillbook=book, current_source=SOURCE, embedder=TestEmbedder(), settings=SMSettings(**settings))
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage())


def test_the_tools_refuse_long_or_unsafe_text_with_a_retry_the_model_can_act_on() -> None:
    book = seeded()
    before = json.dumps(book.to_dict())
    ctx = tool_context(book, max_text_chars=100)
    with pytest.raises(ModelRetry, match="issue is 150 characters, over the limit of 100: say it in fewer words"):
        add_skill(ctx, "context", "x" * 150, ["airline"], "Act.")
    with pytest.raises(ModelRetry, match="insight is 101 characters"):
        update_skill(ctx, "context-00001", "Bags are free for gold members everywhere.", insight="y" * 101)
    with pytest.raises(ModelRetry, match=r"U\+0000"):
        add_skill(ctx, "harness", "Null\x00byte.", ["tau_bench"])
    assert json.dumps(book.to_dict()) == before
    assert [r.tool for r in ctx.deps.refusals] == ["add_skill", "update_skill", "add_skill"]


# ------------------------------------------------------------------------------------------ tag delta
@pytest.mark.parametrize("delta", [True, False, 1.0, "1", np.int64(1)])
def test_tag_delta_must_be_an_integer(delta: Any) -> None:
    book = seeded()
    with pytest.raises(SkillbookError, match=r"delta must be -1 .* as an integer"):
        book.tag_skill("context-00001", delta)
    assert book.require_skill("context-00001").used_count == 0


def scripted(*steps: list[ToolCallPart]) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=list(steps[n]) if n < len(steps) else [TextPart("Done.")])

    return FunctionModel(model)


def test_a_session_refuses_lax_deltas_and_counts_every_schema_retry(spans: TestExporter) -> None:
    """`true`, `1.0` and `"1"` are refused by the tool's schema before the tool runs; each counts as a refusal,
    like an add without keywords, and only the well-formed tag is applied."""
    book = seeded()
    model = scripted(
        [ToolCallPart("tag_skill", {"skill_id": "context-00001", "delta": True})],
        [ToolCallPart("tag_skill", {"skill_id": "context-00001", "delta": 1.0})],
        [ToolCallPart("tag_skill", {"skill_id": "context-00001", "delta": "1"})],
        [ToolCallPart("add_skill", {"section": "harness", "issue": "Timeouts."})],
        [ToolCallPart("tag_skill", {"skill_id": "context-00001", "delta": 1})],
    )
    result = SkillManager(model, embedder=TestEmbedder(), settings=SMSettings(tool_retries=5)).update_skills(
        [REFLECTION], book, source=SOURCE
    )
    assert result.completed
    assert [r.tool for r in result.refusals] == ["tag_skill", "tag_skill", "tag_skill", "add_skill"]
    assert "delta" in result.refusals[0].reason and "keywords" in result.refusals[3].reason
    skill = book.require_skill("context-00001")
    assert (skill.used_count, skill.helpful_count) == (1, 1) and len(book) == 2
    [session] = [s for s in spans.exported_spans_as_dict() if s["name"] == "sm.session"]
    assert session["attributes"]["ace.refused_count"] == 4 and session["attributes"]["ace.ops_tagged"] == 1


# ------------------------------------------------------------------------------------- the vector cache
def embedded(tmp_path: Path) -> tuple[Skillbook, Path]:
    book = seeded()
    book.embedding_model = "m"
    for n, skill in enumerate(book.skills()):
        book.set_embedding(skill.id, np.full(8, n + 1, dtype=np.float32))
    book.save_to_file(tmp_path / "skillbook.json")
    return book, tmp_path / "skillbook.embeddings.npz"


def npy_member(zf: zipfile.ZipFile, name: str, header: dict[str, Any], payload: bytes) -> None:
    with zf.open(f"{name}.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
        member.write(payload)


def test_nan_or_infinite_vectors_are_refused() -> None:
    book = seeded()
    for bad in (np.nan, np.inf):
        vector = np.ones(8, dtype=np.float32)
        vector[3] = bad
        with pytest.raises(SkillbookError, match="NaN or infinite"):
            book.set_embedding("context-00001", vector)
    assert book.require_skill("context-00001").embedding is None


def test_a_cache_with_nan_vectors_is_ignored_for_those_skills_with_a_warning(tmp_path: Path) -> None:
    book, sidecar = embedded(tmp_path)
    matrix = np.stack([s.embedding for s in book.skills() if s.embedding is not None])
    matrix[0, 2] = np.nan
    hashes = text_list(np.load(sidecar)["hashes"])
    with sidecar.open("wb") as f:
        embeddings_writer(ids=[s.id for s in book.skills()], hashes=hashes, matrix=matrix, model="m")(f)
    with pytest.warns(RuntimeWarning, match="context-00001 hold NaN or infinite values; ignored"):
        loaded = Skillbook.load_from_file(tmp_path / "skillbook.json")
    assert loaded.require_skill("context-00001").embedding is None
    assert loaded.require_skill("harness-00001").embedding is not None


def test_a_cache_announcing_absurd_sizes_is_not_loaded(tmp_path: Path) -> None:
    """The sizes come from the `.npy` headers, checked before any array is read: a header announcing 2e8 vectors
    allocates nothing."""
    _, sidecar = embedded(tmp_path)
    with zipfile.ZipFile(sidecar, "w") as zf:
        npy_member(zf, "ids", {"descr": "<U13", "fortran_order": False, "shape": (200_000_000,)}, b"")
        npy_member(zf, "hashes", {"descr": "<U24", "fortran_order": False, "shape": (200_000_000,)}, b"")
        npy_member(zf, "embeddings", {"descr": "<f4", "fortran_order": False, "shape": (200_000_000, 8)}, b"\0" * 64)
        npy_member(zf, "model", {"descr": "<U1", "fortran_order": False, "shape": ()}, "m".encode("utf-32-le"))
    tracemalloc.start()
    try:
        with pytest.warns(RuntimeWarning, match="header announces"):
            loaded = Skillbook.load_from_file(tmp_path / "skillbook.json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000 and loaded.stats()["embedded"] == 0


@pytest.mark.parametrize(
    ("rows", "dim", "problem"),
    [(2, 16, "vectors of dimension 16, expected 8"), (50, 8, "50 vectors for a skillbook of 2 skills")],
)
def test_a_cache_whose_shape_does_not_fit_the_skillbook_is_ignored(
    tmp_path: Path, rows: int, dim: int, problem: str
) -> None:
    _, sidecar = embedded(tmp_path)
    ids = [f"context-{n:05d}" for n in range(1, rows + 1)]
    with sidecar.open("wb") as f:
        embeddings_writer(ids=ids, hashes=["h"] * rows, matrix=np.ones((rows, dim), np.float32), model="m")(f)
    with pytest.warns(RuntimeWarning, match=problem):
        assert Skillbook.load_from_file(tmp_path / "skillbook.json").stats()["embedded"] == 0


def test_a_sound_cache_loads_without_warnings(tmp_path: Path) -> None:
    embedded(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = Skillbook.load_from_file(tmp_path / "skillbook.json")
    assert loaded.stats()["embedded"] == 2


# ------------------------------------------------------------------------------------------ the export
def test_the_markdown_export_escapes_a_skill_id() -> None:
    book = seeded()
    # An id the skillbook never assigns (Skill refuses the assignment: forced here, as a damaged caller might)
    object.__setattr__(book.require_skill("context-00001"), "id", "evil`\n# Injected <script>alert(1)</script>")
    markdown = export_markdown(book)
    assert not any(line.startswith("# Injected") for line in markdown.splitlines())
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown
    assert "### `harness-00001`" in markdown  # an ordinary id stays a code span
