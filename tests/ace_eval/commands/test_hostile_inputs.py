"""Every command that reads a file, fed the same hostile files: JSON nested 50,000 deep, a 5,000-digit integer, an
empty file, duplicate ids and a missing required key. Each exits 2 naming the file, with no traceback, and writes
nothing (the folder tree is compared byte for byte before and after)."""

from __future__ import annotations

import copy
import functools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import scripted_injections
from _review_support import demo_collection, published_skillbook, review_run
from _run_support import good_book, write_run
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.e2e import runner

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
KINDS = ("deep", "bigint", "empty", "duplicate", "missing")
DEEP, BIG = "__DEEP__", "__BIG__"
Json = Any


@dataclass(frozen=True)
class Shape:
    """How to make each hostile variant of one kind of file: JSON (`lines=False`) or JSON Lines."""

    lines: bool
    deep: Callable[[Json], None]
    """Put the `DEEP` marker somewhere in the data (replaced by 50,000 nested arrays)."""
    bigint: Callable[[Json], None]
    """Put the `BIG` marker where a number goes (replaced by a 5,000-digit integer)."""
    duplicate: Callable[[Json], None]
    missing: Callable[[Json], None]


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Json], None]:
    def apply(data: Json) -> None:
        for part in path[:-1]:
            data = data[part]
        data[path[-1]] = value

    return apply


def _delete(path: tuple[Any, ...]) -> Callable[[Json], None]:
    def apply(data: Json) -> None:
        for part in path[:-1]:
            data = data[part]
        del data[path[-1]]

    return apply


def _copy_first(path: tuple[Any, ...] = ()) -> Callable[[Json], None]:
    """The first item of the list at `path` again, as its second item (the same id twice)."""

    def apply(data: Json) -> None:
        for part in path:
            data = data[part]
        data.insert(1, copy.deepcopy(data[0]))

    return apply


TRACES = Shape(
    True, _set((0, "metadata"), {"x": DEEP}), _set((0, "reward"), BIG), _copy_first(), _delete((0, "question"))
)
OPENAI = Shape(
    True, _set((0, "metadata"), {"x": DEEP}), _set((0, "reward"), BIG), _copy_first(), _delete((0, "messages"))
)
TAU_BENCH = Shape(
    False, _set((0, "info", "extra"), DEEP), _set((0, "reward"), BIG), _copy_first(), _delete((0, "reward"))
)
TAU2 = Shape(
    False,
    _set(("info", "extra"), DEEP),
    _set(("simulations", 0, "seed"), BIG),
    _copy_first(("simulations",)),
    _delete(("simulations", 0, "id")),
)
TAU2_SCORED = Shape(
    False,
    _set(("info", "extra"), DEEP),
    _set(("simulations", 0, "seed"), BIG),
    _copy_first(("simulations",)),
    _delete(("simulations", 0, "task_id")),
)
SCORES = Shape(
    False,
    _set(("models",), {"x": DEEP}),
    _set(("num_trials",), BIG),
    _copy_first(("tasks", "t1")),
    _delete(("benchmark",)),
)
SKILLBOOK = Shape(
    False, _set(("extra",), DEEP), _set(("next_ids", "context"), BIG), _copy_first(("skills",)), _delete(("skills",))
)
SPANS = Shape(
    True, _set((0, "attributes"), {"x": DEEP}), _set((0, "attributes"), {"n": BIG}), _copy_first(), _delete((0, "name"))
)
QUEUE = Shape(
    False,
    _set(("candidates", 0, "keywords"), [DEEP]),
    _set(("next_number",), BIG),
    _copy_first(("candidates",)),
    _delete(("candidates",)),
)


def hostile(shape: Shape, good: bytes, kind: str) -> bytes:
    """`good` (a file of `shape`) made hostile in the way `kind` names."""
    if kind == "empty":
        return b""
    data: Json = [json.loads(line) for line in good.splitlines() if line.strip()] if shape.lines else json.loads(good)
    getattr(shape, kind)(data)
    text = "".join(json.dumps(line) + "\n" for line in data) if shape.lines else json.dumps(data, indent=1)
    text = text.replace(f'"{DEEP}"', "[" * 50_000 + "]" * 50_000).replace(f'"{BIG}"', "9" * 5_000)
    return text.encode("utf-8")


# --------------------------------------------------------------------------------- the commands and their inputs
Setup = Callable[[Path], tuple[list[str], Path, Shape]]
"""Build good inputs under a folder; return the command line, the file to make hostile and its shape."""


def _collection(tmp: Path) -> Path:
    shutil.copytree(DEMO, tmp / "collection")
    return tmp / "collection"


def _demo_traces() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DEMO / "traces.jsonl").read_text(encoding="utf-8").splitlines()]


def import_tau_bench(tmp: Path) -> tuple[list[str], Path, Shape]:
    runs = [
        {
            "task_id": i,
            "reward": t["reward"],
            "info": {"task": {"instruction": t["question"]}},
            "traj": t["messages"],
            "trial": 0,
        }
        for i, t in enumerate(_demo_traces())
    ]
    src = tmp / "runs.json"
    src.write_text(json.dumps(runs), encoding="utf-8")
    return ["collection", "import", str(src), "--format", "tau-bench", "--out", str(tmp / "out")], src, TAU_BENCH


def import_tau2(tmp: Path) -> tuple[list[str], Path, Shape]:
    sims = [
        {
            "id": f"sim-{i}",
            "task_id": str(i),
            "trial": 0,
            "seed": 7,
            "reward_info": {"reward": t["reward"]},
            "messages": [{"role": "user", "content": t["question"]}, {"role": "assistant", "content": "Done."}],
        }
        for i, t in enumerate(_demo_traces())
    ]
    src = tmp / "results.json"
    src.write_text(json.dumps({"info": {}, "tasks": [], "simulations": sims}), encoding="utf-8")
    return ["collection", "import", str(src), "--format", "tau2", "--out", str(tmp / "out")], src, TAU2


def import_openai(tmp: Path) -> tuple[list[str], Path, Shape]:
    src = tmp / "chats.jsonl"
    lines = [{"id": t["trace_id"], "messages": t["messages"], "reward": t["reward"]} for t in _demo_traces()]
    src.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return ["collection", "import", str(src), "--format", "openai-jsonl", "--out", str(tmp / "out")], src, OPENAI


def _tau2_scored(path: Path) -> Path:
    sims = [
        {"id": f"s{t}{i}", "task_id": f"t{t}", "trial": i, "seed": 300 + i, "reward_info": {"reward": 1.0}}
        for t in range(3)
        for i in range(2)
    ]
    path.write_text(json.dumps({"info": {"num_trials": 2}, "tasks": [], "simulations": sims}), encoding="utf-8")
    return path


def gate_tau2(*args: str) -> Setup:
    def setup(tmp: Path) -> tuple[list[str], Path, Shape]:
        baseline, candidate = _tau2_scored(tmp / "baseline.json"), _tau2_scored(tmp / "candidate.json")
        return [a.replace("BASE", str(baseline)).replace("CAND", str(candidate)) for a in args], candidate, TAU2_SCORED

    return setup


def gate_scores(tmp: Path) -> tuple[list[str], Path, Shape]:
    good = {
        "benchmark": "toy",
        "num_trials": 2,
        "tasks": {f"t{t}": [{"reward": 1.0, "success": True}] * 2 for t in range(3)},
    }
    (tmp / "a.json").write_text(json.dumps(good), encoding="utf-8")
    (tmp / "b.json").write_text(json.dumps(good), encoding="utf-8")
    return ["gate", "compare", str(tmp / "a.json"), str(tmp / "b.json")], tmp / "b.json", SCORES


def on_collection(*args: str) -> Setup:
    def setup(tmp: Path) -> tuple[list[str], Path, Shape]:
        folder = _collection(tmp)
        argv = [a.replace("DIR", str(folder)).replace("TMP", str(tmp)) for a in args]
        return argv, folder / "traces.jsonl", TRACES

    return setup


def on_skillbook(*args: str, run_folder: bool = False) -> Setup:
    def setup(tmp: Path) -> tuple[list[str], Path, Shape]:
        if run_folder:
            folder = write_run(tmp / "run", good_book())
            target, file = folder, folder / "skillbook.json"
        else:
            file = tmp / "skillbook.json"
            good_book().save_to_file(file)
            target = file
        collection = _collection(tmp)
        argv = [a.replace("PATH", str(target)).replace("COLLECTION", str(collection)) for a in args]
        return [a.replace("TMP", str(tmp)) for a in argv], file, SKILLBOOK

    return setup


def inspect_run(tmp: Path) -> tuple[list[str], Path, Shape]:
    folder = write_run(tmp / "run", good_book(), embed=False)
    return ["inspect", str(folder)], folder / "spans.jsonl", SPANS


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A review run's published skillbook and its queue of four candidates."""
    tmp = tmp_path_factory.mktemp("reviewed")
    published = published_skillbook(tmp / "prod" / "skillbook.json")
    review_run(demo_collection(tmp), published, tmp / "out")
    return published.parent


def on_queue(*args: str) -> Setup:
    def setup(tmp: Path) -> tuple[list[str], Path, Shape]:
        raise AssertionError("replaced by the `reviewed` fixture in the test")  # pragma: no cover

    setup.args = args  # type: ignore[attr-defined]
    return setup


COMMANDS: dict[str, Setup] = {
    "collection import tau-bench": import_tau_bench,
    "collection import tau2": import_tau2,
    "collection import openai-jsonl": import_openai,
    "collection stats": on_collection("collection", "stats", "DIR"),
    "collection repair": on_collection("collection", "repair", "DIR"),
    "scan": on_collection("scan", "DIR"),
    "e2e --traces": on_collection("e2e", "--traces", "DIR", "--no-benchmark", "--limit", "1", "--output-dir", "TMP/o"),
    "e2e --skillbook": on_skillbook(
        "e2e",
        "--traces",
        "COLLECTION",
        "--no-benchmark",
        "--limit",
        "1",
        "--skillbook",
        "PATH",
        "--output-dir",
        "TMP/o",
    ),
    "verify": on_skillbook("verify", "PATH", run_folder=True),
    "gate compare tau2": gate_tau2("gate", "compare", "BASE", "CAND"),
    "gate compare scores": gate_scores,
    "scores": gate_tau2("scores", "CAND"),
    "skills stats": on_skillbook("skills", "stats", "PATH"),
    "skills quarantine": on_skillbook("skills", "quarantine", "PATH", "context-00001", "--reason", "r", "--by", "a"),
    "skills release": on_skillbook("skills", "release", "PATH", "context-00001", "--reason", "r", "--by", "a"),
    "inspect": inspect_run,
    "review list": on_queue("review", "list", "PATH"),
    "review show": on_queue("review", "show", "PATH", "c00001"),
    "review accept": on_queue("review", "accept", "PATH", "c00001", "--reviewer", "a"),
    "review reject": on_queue("review", "reject", "PATH", "c00001", "--reviewer", "a", "--reason", "r"),
}


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_hostile_file_is_refused_naming_it_with_no_traceback_and_nothing_written(
    command: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.chdir(tmp_path)
    inj = scripted_injections()
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=inj))
    for var in ("ACE_MODEL", "ACE_E2E_OUTPUT_DIR", "LOGFIRE_TOKEN", "LOGFIRE_CREDENTIALS_DIR"):
        monkeypatch.delenv(var, raising=False)
    setup = COMMANDS[command]
    if hasattr(setup, "args"):
        shutil.copytree(request.getfixturevalue("reviewed"), tmp_path / "prod")
        book = tmp_path / "prod" / "skillbook.json"
        argv, file, shape = (
            [a.replace("PATH", str(book)) for a in setup.args],
            book.with_name("skillbook.review.json"),
            QUEUE,
        )
    else:
        argv, file, shape = setup(tmp_path)
    file.write_bytes(hostile(shape, file.read_bytes(), kind))
    before = tree(tmp_path)

    result = CliRunner().invoke(main, argv)

    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit | None), (
        result.output,
        result.exception,
    )
    assert tree(tmp_path) == before, "wrote a file"
    assert result.exit_code == 2, result.output
    assert file.name in result.output, result.output
    assert len(result.output) < 2_000, result.output  # a message, not a dump of the file
