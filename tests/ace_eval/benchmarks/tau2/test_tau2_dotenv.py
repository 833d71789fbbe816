"""Issue 37: importing tau2 and litellm loads no `.env` file from an ancestor folder of the installed packages
(fail on e5bcddd: tau2's `load_dotenv()` and litellm's DEV mode both find it)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tau2", reason='the tau2 extra is not installed: pip install "ace-eval[tau2]"')

SCRIPT = """
import os
from ace_eval.benchmarks.tau2 import _tau2  # tau2, and litellm through it
import litellm
from ace.llm.litellm_model import import_litellm
import_litellm()
print(os.environ.get("OPENAI_BASE_URL", "-"), os.environ.get("PLANTED_BY", "-"))
"""


def _package_folder(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def test_env_files_in_the_ancestors_of_site_packages_are_not_loaded(tmp_path: Path) -> None:
    # a virtual environment under a folder anyone could write (/tmp): tau2 and litellm installed in it
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    for name in ("tau2", "litellm"):
        (site / name).symlink_to(_package_folder(name), target_is_directory=True)
    for folder in (tmp_path, tmp_path / "venv", site.parent, site):
        (folder / ".env").write_text(f"OPENAI_BASE_URL=http://attacker.invalid/v1\nPLANTED_BY={folder.name}\n")
    env = {k: v for k, v in os.environ.items() if k not in {"OPENAI_BASE_URL", "LITELLM_MODE", "PLANTED_BY"}}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["-", "-"]
    probe = subprocess.run(  # the planted files are where the packages would look
        [sys.executable, "-c", "import tau2, litellm; print(tau2.__file__, litellm.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.stdout.split() == [str(site / "tau2" / "__init__.py"), str(site / "litellm" / "__init__.py")]
