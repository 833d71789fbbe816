"""Installing step plugins for a test: a real `*.dist-info` (METADATA + entry_points.txt) in a folder on sys.path,
which is all `importlib.metadata` (and so the step registry) looks at."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLE_PLUGIN = Path(__file__).resolve().parents[1] / "examples" / "plugins" / "ace-domain-filter"


def install_distribution(
    site: Path, monkeypatch: pytest.MonkeyPatch, name: str, version: str, steps: dict[str, str]
) -> None:
    """Write `name-version.dist-info` registering `steps` (entry point name -> `module:attr`) and put `site` on
    sys.path."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = "".join(f"{step} = {target}\n" for step, target in steps.items())
    (info / "entry_points.txt").write_text(f"[ace.steps]\n{lines}", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))


def install_example_plugin(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`examples/plugins/ace-domain-filter` as an installed distribution: its metadata, with its sources on the path
    (what `pip install -e` does), its entry point read from its own pyproject.toml."""
    import tomllib

    project = tomllib.loads((EXAMPLE_PLUGIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    steps = project["entry-points"]["ace.steps"]
    install_distribution(site, monkeypatch, project["name"], project["version"], steps)
    monkeypatch.syspath_prepend(str(EXAMPLE_PLUGIN / "src"))
