"""What changed between two skillbooks, skill by skill: added, removed (gone or deactivated), changed (which fields)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ace.core.skill import Skill
from ace.core.skillbook import Skillbook

__all__ = ["COMPARED_FIELDS", "SkillChange", "SkillbookDiff", "diff_skillbooks"]

COMPARED_FIELDS: tuple[str, ...] = (
    "section",
    "issue",
    "insight",
    "keywords",
    "quarantined",
    "helpful_count",
    "harmful_count",
    "neutral_count",
)
"""The fields whose change makes a skill "changed" (its audit chain and timestamps always grow with an edit)."""


@dataclass(frozen=True)
class SkillChange:
    """One skill active in both skillbooks whose fields differ: field -> (before, after)."""

    skill_id: str
    fields: dict[str, tuple[object, object]]


@dataclass(frozen=True)
class SkillbookDiff:
    """Skills added, removed and changed from skillbook A to skillbook B (active skills only), by id."""

    added: list[Skill] = field(default_factory=list)
    removed: list[Skill] = field(default_factory=list)
    changed: list[SkillChange] = field(default_factory=list)
    unchanged: int = 0

    @property
    def empty(self) -> bool:
        """Whether the two skillbooks hold the same skills."""
        return not (self.added or self.removed or self.changed)

    def to_dict(self) -> dict[str, object]:
        """A JSON form: ids and texts of added/removed skills, changed fields with both values."""
        return {
            "added": [_brief(s) for s in self.added],
            "removed": [_brief(s) for s in self.removed],
            "changed": [
                {"id": c.skill_id, "fields": {k: {"before": a, "after": b} for k, (a, b) in c.fields.items()}}
                for c in self.changed
            ],
            "unchanged": self.unchanged,
        }


def _brief(skill: Skill) -> dict[str, object]:
    return {"id": skill.id, "section": skill.section, "issue": skill.issue, "insight": skill.insight}


def _values(skill: Skill) -> dict[str, object]:
    return {
        "section": skill.section,
        "issue": skill.issue,
        "insight": skill.insight,
        "keywords": list(skill.keywords),
        "quarantined": skill.quarantine is not None,
        "helpful_count": skill.helpful_count,
        "harmful_count": skill.harmful_count,
        "neutral_count": skill.neutral_count,
    }


def diff_skillbooks(a: Skillbook, b: Skillbook) -> SkillbookDiff:
    """The skill-by-skill difference from `a` to `b`, each list in id order."""
    before = {s.id: s for s in a.skills()}
    after = {s.id: s for s in b.skills()}
    changed: list[SkillChange] = []
    unchanged = 0
    for skill_id in sorted(before.keys() & after.keys()):
        old, new = _values(before[skill_id]), _values(after[skill_id])
        fields = {k: (old[k], new[k]) for k in COMPARED_FIELDS if old[k] != new[k]}
        if fields:
            changed.append(SkillChange(skill_id, fields))
        else:
            unchanged += 1
    return SkillbookDiff(
        added=[after[i] for i in sorted(after.keys() - before.keys())],
        removed=[before[i] for i in sorted(before.keys() - after.keys())],
        changed=changed,
        unchanged=unchanged,
    )
