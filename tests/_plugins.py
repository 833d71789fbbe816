"""Installing step plugins for a test: a real `*.dist-info` (METADATA + entry_points.txt) in a folder on sys.path,
which is all `importlib.metadata` (and so the step registry) looks at."""

from __future__ import annotations

from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[1] / "examples" / "plugins"
EXAMPLE_PLUGIN = PLUGINS / "ace-domain-filter"
TOY_BENCHMARK = PLUGINS / "ace-toy-benchmark"


def install_distribution(
    site: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    version: str,
    steps: dict[str, str],
    group: str = "ace.steps",
) -> None:
    """Write `name-version.dist-info` registering `steps` (entry point name -> `module:attr`) in the entry-point
    `group` and put `site` on sys.path."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = "".join(f"{step} = {target}\n" for step, target in steps.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))


def install_example_plugin(
    site: Path, monkeypatch: pytest.MonkeyPatch, plugin: Path = EXAMPLE_PLUGIN, group: str = "ace.steps"
) -> None:
    """An example plugin of `examples/plugins/` (default ace-domain-filter) as an installed distribution: its
    metadata, with its sources on the path (what `pip install -e` does), its entry points of `group` read from its
    own pyproject.toml."""
    import tomllib

    project = tomllib.loads((plugin / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    install_distribution(site, monkeypatch, project["name"], project["version"], project["entry-points"][group], group)
    monkeypatch.syspath_prepend(str(plugin / "src"))


def install_toy_benchmark(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`examples/plugins/ace-toy-benchmark` (the benchmark `toy-support`) as an installed distribution."""
    install_example_plugin(site, monkeypatch, TOY_BENCHMARK, "ace_eval.benchmarks")
