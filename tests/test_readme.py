"""The Python examples of the project's markdown files (README.md, docs/, examples/) run as written.

Every fenced block is read by its info string: `python`, `py`, `python3` (and any of them with attributes after a
space, e.g. ```` ```py title="x" ````) run; the other languages are listed in `NOT_PYTHON`, so a block in a new
spelling fails `test_every_fenced_block_has_a_known_language` instead of being silently skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARKDOWN = [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").rglob("README.md"))]
PYTHON = frozenset({"python", "py", "python3"})
NOT_PYTHON = frozenset({"", "bash", "sh", "console", "toml", "json", "jsonl", "text"})
_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language (the info string's first word, lower case), its code."""

    path: Path
    line: int
    language: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a markdown file, in order (a fence closes with the same marker, at least as long)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        marker, info = opening.groups()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not (lines[i].startswith(marker[0] * len(marker)) and not lines[i].strip(marker[0])):
            body.append(lines[i])
            i += 1
        words = info.strip().split()
        blocks.append(Block(path, start, words[0].lower() if words else "", "\n".join(body) + "\n"))
        i += 1
    return blocks


BLOCKS = [b for path in MARKDOWN for b in fenced_blocks(path)]
PYTHON_BLOCKS = [b for b in BLOCKS if b.language in PYTHON]


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.id for b in PYTHON_BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = "\n" * (block.line - 1) + block.code  # tracebacks point at the markdown line
    exec(compile(code, str(block.path), "exec"), {"__name__": "readme"})


def test_every_fenced_block_has_a_known_language() -> None:
    unknown = [(b.id, b.language) for b in BLOCKS if b.language not in PYTHON | NOT_PYTHON]
    assert unknown == [], "add the language to PYTHON (it runs) or NOT_PYTHON"


def test_every_python_spelling_is_collected(tmp_path: Path) -> None:
    sample = tmp_path / "sample.md"
    sample.write_text(
        "intro\n```py\nx = 1\n```\n```python title='t'\ny = 2\n```\n````Python3\nz = 3\n````\n```\nnot python\n```\n",
        encoding="utf-8",
    )
    found = [(b.language, b.code) for b in fenced_blocks(sample)]
    assert found == [("py", "x = 1\n"), ("python", "y = 2\n"), ("python3", "z = 3\n"), ("", "not python\n")]


def test_readme_has_python_examples() -> None:
    readme = [b for b in PYTHON_BLOCKS if b.path == README]
    assert len(readme) >= 4 and {b.language for b in readme} == {"python", "py"}
    # learning from traces goes through the registry, the one way to build a pipeline
    [learning] = [b.code for b in readme if "make_reflector" in b.code and "run_sample" in b.code]
    assert "build_pipeline(" in learning and "Pipeline([" not in learning
