"""Skillbooks and stores for the store tests: small real skillbooks (with and without an embeddings sidecar)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from ace import Skillbook
from ace_eval.cli import main
from ace_eval.store import ProducedBy, SkillbookStore

BY_TEST = ProducedBy(kind="test")


def skillbook_file(path: Path, *issues: str, vectors: bool = False) -> Path:
    """A skillbook at `path` with one context skill per issue (and an `.embeddings.npz` when `vectors`)."""
    book = Skillbook()
    for n, issue in enumerate(issues):
        skill = book.add_skill("context", issue, [f"kw{n}"], f"Do the right thing about {issue.lower()}")
        if vectors:
            book.set_embedding(skill.id, [float(n + 1), 0.5, 0.25])
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save_to_file(path)
    return path


def store_with(root: Path, tmp: Path, count: int) -> SkillbookStore:
    """A store at `root` with `count` versions, version n holding skills 1..n."""
    store = SkillbookStore.create(root)
    for n in range(1, count + 1):
        source = skillbook_file(tmp / f"src{n}" / "skillbook.json", *[f"Issue number {i}" for i in range(1, n + 1)])
        store.publish(source, produced_by=BY_TEST, ungated_reason=f"test version {n}")
    return store


def cli(*args: object) -> Result:
    """`ace-eval ARGS`, in process."""
    return CliRunner().invoke(main, [str(a) for a in args])
