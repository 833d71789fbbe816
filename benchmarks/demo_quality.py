"""Does the local model learn skills about what actually went wrong? Grounding share before / after the
grader's structured feedback (`<grader_diff>`), on the demo collection and the real tau-bench runs.

    .venv/bin/python benchmarks/demo_quality.py [--limit N] [--real-limit N] [--collections demo,real]

Each collection is replayed twice through the demo's pipeline (`ace-eval demo`: simple reflector and skill
manager on SmolLM2-135M via llama.cpp, MiniLM embeddings): BEFORE with the reflector's `grader_feedback`
switched off (it sees the reward, the feedback line and the gold actions, as before the comparison existed)
and AFTER with it on. A learned skill is grounded when its issue, insight or keywords name a tool or an
argument (name or value) that differed in a trace it was learned from (`ace_eval.e2e.grading.grounding`); the share
is over the skills learned from at least one trace with such a difference. Needs the `local` extra; the real
runs need ../shared/data/tau-bench (or --trajectories). Each row is printed when its run ends; SmolLM2 takes
about a minute per real trace on 2 cores, so use --real-limit on a busy machine. `--summarise RUN_DIR...`
prints the rows of existing run folders instead (one cut short counts the samples it finished).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ace.core.skillbook import Skillbook
from ace_eval.collection import read_collection, write_collection
from ace_eval.collection.importers.tau_bench import import_tau_bench
from ace_eval.commands.demo import demo_injections, find_demo_collection
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.grading.grounding import GroundingSummary, reflection_grounding, summarise_grounding
from ace_eval.e2e.runner import run_e2e

DEFAULT_TRAJECTORIES = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tau-bench" / "airline"
) / "trajectories-gpt-4o-tasks-0-29.json"
_SHOWN_SKILLS = 4


@dataclass(frozen=True, kw_only=True)
class Row:
    collection: str
    variant: str
    traces: int
    errors: int
    grounding: GroundingSummary
    reflections: tuple[int, int]
    """(reflections on a trace with a difference, those that name a differing tool or argument)"""
    minutes: float
    skills: tuple[tuple[str, str, str, tuple[str, ...]], ...]
    """(id, issue, insight, keywords) of the first learned skills."""
    folder: str

    def line(self) -> str:
        g = self.grounding
        share = "-" if g.share is None else f"{g.share:.0%}"
        return (
            f"| {self.collection} | {self.variant} | {self.traces} | {self.errors} | "
            f"{self.reflections[1]}/{self.reflections[0]} | {g.skills} | {g.with_diff} | {g.grounded} | {share} | "
            f"{self.minutes:.1f} |"
        )


HEADER = (
    "| collection | grader feedback | traces | sample errors | reflections naming a diff | skills | "
    "skills from a trace with a diff | grounded skills | grounded share | minutes |\n"
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def real_collection(trajectories: Path, into: Path) -> Path:
    """The 120 real runs as a collection (with the grader's comparisons), written under `into`."""
    if not trajectories.is_file():
        sys.exit(f"{trajectories} not found: pass --trajectories (tau-bench results file) or --collections demo")
    imported = import_tau_bench(trajectories)
    folder = into / "tau-bench-real"
    if not folder.is_dir():  # a second run in the same --output-dir reuses the import
        write_collection(folder, imported.traces, source_system=imported.source_system, benchmark=imported.benchmark)
    return folder


def replay(name: str, collection: Path, *, feedback: bool, limit: int | None, output_dir: Path) -> Row:
    """One pipeline run on the local model; the grounding of the skills it learned."""
    injections = demo_injections(show_progress=False)
    options = {**injections.reflector_options, "grader_feedback": feedback}
    injections = dataclasses.replace(injections, reflector_options=options)
    settings = E2ESettings(
        traces=collection,
        no_benchmark=True,
        reflector_type="simple",
        output_dir=output_dir / f"{name}-{'after' if feedback else 'before'}",
        limit=limit,
    )
    started = time.monotonic()
    result = run_e2e(settings, injections=injections)
    row = summarise(result.folder.path)
    return dataclasses.replace(row, minutes=(time.monotonic() - started) / 60)


def summarise(run_dir: Path) -> Row:
    """The row of an existing run folder `<output>/<collection>-<before|after>/run_<id>`, finished or not."""
    record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    _, traces = read_collection(run_dir / "collection")
    done = {s["trace_uid"] for s in samples}
    book = Skillbook.load_from_file(run_dir / "skillbook.json")
    graders = {t.trace_uid: t.grader for t in traces if t.trace_uid in done}
    name, _, variant = run_dir.parent.name.rpartition("-")
    started = datetime.fromisoformat(record["created_at"]).timestamp()
    ended = max(p.stat().st_mtime for p in (run_dir / "samples.jsonl", run_dir / "skillbook.json"))
    partial = "" if record.get("status") == "completed" else f", {record.get('status')}: cut short"
    skills = book.skills()
    return Row(
        collection=name,
        variant=("after (with <grader_diff>)" if variant == "after" else "before (without)") + partial,
        traces=len(done),
        errors=sum(1 for s in samples if s.get("error")),
        grounding=summarise_grounding(skills, graders),
        reflections=reflection_grounding(((s["trace_uid"], s.get("reflection")) for s in samples), graders),
        minutes=(ended - started) / 60,
        skills=tuple((s.id, s.issue, s.insight or "", tuple(s.keywords)) for s in skills[:_SHOWN_SKILLS]),
        folder=str(run_dir),
    )


def print_skills(rows: list[Row]) -> None:
    print("\nLearned skills (first ones of each run; grounded ones list the terms they name):")
    for row in rows:
        named = dict(row.grounding.examples)
        print(f"\n{row.collection}, {row.variant}: {row.folder}")
        for skill_id, issue, insight, keywords in row.skills:
            mark = f"  [grounded: {', '.join(named[skill_id])}]" if skill_id in named else ""
            print(f"  {skill_id}: issue {issue!r}; insight {insight!r}; keywords {list(keywords)}{mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", default="demo,real", help="demo, real, or both (default: %(default)s)")
    parser.add_argument("--limit", type=int, help="traces of the demo collection (default: all 10)")
    parser.add_argument("--real-limit", type=int, help="first N of the 120 real runs (default: all)")
    parser.add_argument("--trajectories", type=Path, default=DEFAULT_TRAJECTORIES)
    parser.add_argument("--variants", default="before,after", help="before, after, or both (default: %(default)s)")
    parser.add_argument("--output-dir", type=Path, help="run folders (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the rows (and learned skills) to this file")
    parser.add_argument("--summarise", type=Path, nargs="+", metavar="RUN_DIR", help="rows of existing run folders")
    args = parser.parse_args()
    if args.summarise:
        rows = [summarise(run_dir) for run_dir in args.summarise]
        print(HEADER)
        for row in rows:
            print(row.line())
        print_skills(rows)
        return
    names = [n.strip() for n in args.collections.split(",") if n.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not set(names) <= {"demo", "real"} or not set(variants) <= {"before", "after"} or not names or not variants:
        parser.error("--collections takes demo and/or real; --variants before and/or after")
    with tempfile.TemporaryDirectory(prefix="ace-demo-quality-") as scratch:
        output_dir = args.output_dir or Path(scratch)
        output_dir.mkdir(parents=True, exist_ok=True)
        rows: list[Row] = []
        print(HEADER, flush=True)
        for name in names:
            if name == "demo":
                collection = find_demo_collection()
                if collection is None:
                    sys.exit("examples/demo-collection not found: run from the repository root")
                limit = args.limit
            else:
                collection, limit = real_collection(args.trajectories, output_dir), args.real_limit
            for variant in variants:
                row = replay(name, collection, feedback=variant == "after", limit=limit, output_dir=output_dir)
                rows.append(row)
                print(row.line(), flush=True)
                if args.json is not None:
                    args.json.write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=1, default=str))
        print_skills(rows)


if __name__ == "__main__":
    main()
