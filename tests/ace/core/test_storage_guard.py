"""A static guard: skillbook files and their vector cache are read only through `ace.core` (`Skillbook.load_from_file`,
`ace.core.storage.load_sidecar`), so their format, its checks and its errors live in one place."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [ROOT / "ace", ROOT / "ace-eval" / "src", ROOT / "benchmarks", ROOT / "examples"]
CORE = ROOT / "ace" / "core"


def offenders(path: Path) -> list[str]:
    """Every `np.load` call in `path`, and every `json.load*` call whose arguments name a skillbook."""
    text = path.read_text(encoding="utf-8")
    out: list[str] = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        callee = f"{owner.id}.{node.func.attr}" if isinstance(owner, ast.Name) else ""
        args = ", ".join(ast.get_source_segment(text, a) or "" for a in node.args)
        if callee in ("np.load", "numpy.load") or (
            callee in ("json.load", "json.loads") and "skillbook" in args.lower()
        ):
            out.append(f"{path.name}:{node.lineno}: {callee}({args})")
    return out


def test_skillbook_files_and_sidecars_are_read_only_in_ace_core() -> None:
    files = [p for base in SOURCES for p in base.rglob("*.py") if CORE not in p.parents and ".venv" not in p.parts]
    assert len(files) > 50
    found = [o for path in files for o in offenders(path)]
    assert found == [], "read skillbook files with Skillbook.load_from_file and vector caches with load_sidecar"


def test_the_guard_sees_a_sidecar_or_skillbook_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import json\nimport numpy as np\n"
        "a = np.load(path, allow_pickle=False)\n"
        "b = json.loads((folder / 'skillbook.json').read_text())\n"
        "c = json.loads(line)\n",
        encoding="utf-8",
    )
    assert offenders(bad) == [
        "bad.py:3: np.load(path)",
        "bad.py:4: json.loads((folder / 'skillbook.json').read_text())",
    ]
