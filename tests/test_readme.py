"""The README's Python examples (```python and ```py blocks) run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```(?:python|py)\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2
    # learning from traces goes through the registry, the one way to build a pipeline
    [learning] = [block for block in BLOCKS if "make_reflector" in block and "run_sample" in block]
    assert "build_pipeline(" in learning and "Pipeline([" not in learning
