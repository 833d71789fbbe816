"""Where a candidate's evidence came from, and whether it is still there: trace content hashes, skill texts."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ace.core.skillbook import Skillbook
from ace_eval.collection import TRACES_FILE, CollectionError
from ace_eval.collection.read import parse_trace_line, split_lines
from ace_eval.review._grouping import skill_text
from ace_eval.review._model import Candidate

__all__ = ["CollectionHashes", "provenance_problems", "trace_sha256"]


def trace_sha256(trace: Mapping[str, Any]) -> str:
    """Hex sha256 of a trace's canonical JSON (sorted keys): equal exactly when the trace's content is."""
    text = json.dumps(trace, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CollectionHashes:
    """Content hash of every trace of the collections asked about, each collection read once."""

    def __init__(self) -> None:
        self._read: dict[str, dict[str, str] | str] = {}

    def of(self, collection: str) -> dict[str, str] | str:
        """`trace_uid -> sha256` of every valid line of a collection's traces (a line that no longer parses is a
        trace that is gone; the manifest's counts are not checked: an edited collection is what this looks for),
        or why the file cannot be read."""
        found = self._read.get(collection)
        if found is None:
            path = Path(collection) / TRACES_FILE
            try:
                lines, tail = split_lines(path.read_bytes())
            except OSError as e:
                found = f"the collection {collection} cannot be read ({e})"
            else:
                found = {}
                for number, line in [*lines, (len(lines) + 1, tail)] if tail.strip() else lines:
                    try:
                        trace = parse_trace_line(line, file=str(path), number=number)
                    except CollectionError:
                        continue
                    found[trace.trace_uid] = trace_sha256(trace.model_dump(mode="json"))
            self._read[collection] = found
        return found


def provenance_problems(cand: Candidate, published: Skillbook, hashes: CollectionHashes) -> list[str]:
    """Why the candidate's evidence no longer holds (empty: it does): a cited trace removed from its collection or
    edited since, or a target skill that no longer reads as it did when the run forked the skillbook."""
    problems: list[str] = []
    for ref in cand.sources:
        where = f"trace {ref.trace_uid} (epoch {ref.epoch})"
        if ref.collection is None or ref.trace_sha256 is None:
            problems.append(f"{where}: the run recorded no collection to check it against")
            continue
        found = hashes.of(ref.collection)
        if isinstance(found, str):
            problems.append(f"{where}: {found}")
        elif ref.trace_uid not in found:
            problems.append(f"{where}: removed from {ref.collection}")
        elif found[ref.trace_uid] != ref.trace_sha256:
            problems.append(f"{where}: edited in {ref.collection} since the review run read it (content hash differs)")
    if cand.target is not None:
        now = skill_text(published, cand.target)
        if now is None:
            problems.append(f"skill {cand.target}: no longer in the skillbook")
        elif now != cand.base:
            changed = [
                name
                for name in ("issue", "insight", "keywords", "active")
                if getattr(now, name) != getattr(cand.base, name, None)
            ]
            problems.append(f"skill {cand.target}: changed since the candidate was made ({', '.join(changed)})")
    return problems
