"""`Skill` fields are set by the skillbook only: an assignment is refused naming the method to use, and leaves
the skill (and a later save) intact; the method itself takes what the assignment was trying to give."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from ace import Skillbook, SkillbookError
from ace.core.skill import SKILL_FIELD_METHODS, Skill
from ace.exceptions import SkillFieldError

ISSUE = "The tau2 runner retries Bedrock 429 errors with a 60 s backoff."

ASSIGNMENTS: list[tuple[str, object, str]] = [
    ("embedding", [0.1, 0.2, 0.3], "skillbook.set_embedding('harness-00001', vector)"),
    ("issue", "Another issue text for the same skill.", "skillbook.update_skill('harness-00001', issue"),
    ("insight", "Wait longer.", "skillbook.update_skill('harness-00001', issue"),
    ("keywords", ["Rate Limit"], "skillbook.update_skill('harness-00001', issue, keywords"),
    ("active", False, "skillbook.remove_skill('harness-00001', reason)"),
    ("helpful_count", 3, "skillbook.tag_skill('harness-00001', delta)"),
    ("used_count", 3, "skillbook.tag_skill('harness-00001', delta)"),
    ("occurrences", [], "the skillbook records it"),
    ("id", "harness-00009", "ids are assigned by add_skill"),
    ("section", "context", "add a new skill in the other section"),
]


def _book() -> tuple[Skillbook, Skill]:
    sb = Skillbook()
    return sb, sb.add_skill("harness", ISSUE, ["tau2", "rate_limit"])


@pytest.mark.parametrize(("field", "value", "method"), ASSIGNMENTS, ids=[a[0] for a in ASSIGNMENTS])
def test_an_assignment_is_refused_naming_the_skillbook_method(
    field: str, value: object, method: str, tmp_path: Path
) -> None:
    sb, skill = _book()
    before = dataclasses.replace(skill)
    with pytest.raises(SkillFieldError, match=rf"Skill\.{field} cannot be assigned") as refused:
        setattr(skill, field, value)
    assert method in str(refused.value)
    assert isinstance(refused.value, AttributeError) and isinstance(refused.value, SkillbookError)
    assert skill == before and sb.get_skill("harness-00001") == before
    sb.save_to_file(tmp_path / "skillbook.json")  # still saves (a list embedding used to crash it)
    assert Skillbook.load_from_file(tmp_path / "skillbook.json").get_skill("harness-00001") == before


def test_every_field_names_its_method() -> None:
    assert {f.name for f in dataclasses.fields(Skill)} == set(SKILL_FIELD_METHODS)


def test_set_embedding_takes_a_list_and_the_vector_survives_a_save(tmp_path: Path) -> None:
    sb, _ = _book()
    sb.embedding_model = "test-model"
    sb.set_embedding("harness-00001", [0.1, 0.2, 0.3])
    vector = sb.require_skill("harness-00001").embedding
    assert vector is not None and vector.dtype == np.float32 and vector.tolist() == pytest.approx([0.1, 0.2, 0.3])
    sb.save_to_file(tmp_path / "skillbook.json")
    loaded = Skillbook.load_from_file(tmp_path / "skillbook.json").require_skill("harness-00001").embedding
    assert loaded is not None and loaded.tolist() == pytest.approx([0.1, 0.2, 0.3])


def test_the_skillbook_still_edits_and_copies_skills() -> None:
    sb, skill = _book()
    updated = sb.update_skill(skill.id, ISSUE, ["tau2", "backoff"])
    assert updated.keywords == ["tau2", "backoff"] and len(updated.occurrences) == 2
    copy = dataclasses.replace(updated, helpful_count=1)  # a new Skill: the constructor sets its fields
    assert copy.helpful_count == 1 and updated.helpful_count == 0
