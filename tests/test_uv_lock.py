"""`uv.lock` is committed, resolves from the public index only, and covers the `local` extra the README installs
and the `ann` extra the tests use."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_lock_names_only_the_public_index_and_the_local_extra() -> None:
    text = (ROOT / "uv.lock").read_text(encoding="utf-8")
    registries = set(re.findall(r'registry = "([^"]+)"', text))
    assert registries == {"https://pypi.org/simple"}, (
        "re-lock against PyPI: uv lock --index-url https://pypi.org/simple"
    )
    assert "file://" not in text
    lock = tomllib.loads(text)
    names = {p["name"] for p in lock["package"]}
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    wanted = {re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower() for req in [*extras["local"], *extras["ann"]]}
    assert wanted <= names, f"uv.lock lacks {sorted(wanted - names)}: re-run uv lock"
    assert {"ace-eval", "agentic-context-engine"} <= names
