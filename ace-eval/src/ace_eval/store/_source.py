"""What `publish` copies: a skillbook file and its sidecars, or the skillbook a run folder published, checked to read
as a skillbook before anything is written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ace.core.skillbook import Skillbook
from ace.core.storage import sidecar_path
from ace.exceptions import SkillbookError, UserError
from ace.integrations.store_format import SKILLBOOK_FILE
from ace.retrieval import index_path
from ace_eval.run.folder import RUN_JSON, RunFolder
from ace_eval.run.record import load_run_record

__all__ = ["PublishSource", "read_source"]


@dataclass(frozen=True, kw_only=True)
class PublishSource:
    """A skillbook ready to publish: its files (name in the version folder -> where it is now), and the run it came
    from when it came from a run folder."""

    skillbook: Path
    digest: str | None
    """The SHA-256 of the skillbook file as it was loaded: the copy must have the same, or the file changed."""
    files: dict[str, Path]
    run_dir: Path | None
    skill_count: int


def read_source(source: Path) -> PublishSource:
    """The skillbook at `source` (a `skillbook.json`, or a run folder), loaded once to prove it reads; its
    `.embeddings.npz` and `.index.npz` sidecars come along when they are there.

    Raises:
        UserError: `source` is missing, a folder without a published skillbook, or not a skillbook.
    """
    run_dir: Path | None = None
    if source.is_dir():
        if not (source / RUN_JSON).is_file():
            raise UserError(
                f"{source} is a folder but not a run folder (no {RUN_JSON}): pass a skillbook.json, or a run folder "
                "written by `ace-eval e2e`"
            )
        folder = RunFolder.open(source)
        learned = folder.learned_skillbook(load_run_record(folder.run_json))
        if learned != folder.skillbook and learned.name != SKILLBOOK_FILE:
            raise UserError(
                f"{source} has not published its skillbook (only the checkpoint {learned.name} is there: the run was "
                f"interrupted or ran without the persist step): resume it (ace-eval e2e --resume {source}) or "
                f"publish the file itself ({learned})"
            )
        if not learned.is_file():
            raise UserError(f"{source} holds no skillbook: the run learned nothing yet; resume or rerun it")
        run_dir, path = source, learned
    elif source.is_file():
        path = source
    else:
        raise UserError(f"{source}: no such file or folder; pass a skillbook.json or a run folder")
    try:
        book = Skillbook.load_from_file(path)
    except SkillbookError as e:
        raise UserError(f"{path} does not read as a skillbook ({e}); nothing was published") from None
    stem = SKILLBOOK_FILE.removesuffix(".json")
    files = {SKILLBOOK_FILE: path}
    for found, name in ((sidecar_path(path), f"{stem}.embeddings.npz"), (index_path(path), f"{stem}.index.npz")):
        if found.is_file():
            files[name] = found
    digest = book.file_state.digest if book.file_state is not None else None
    return PublishSource(skillbook=path, digest=digest, files=files, run_dir=run_dir, skill_count=len(book.skills()))
