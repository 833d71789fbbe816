"""Start-up time of the `ace-eval` command: `--help`, `--version` and `e2e --help`, each run as a subprocess.

Run: `.venv/bin/python benchmarks/cli_startup.py [--repeat 7] [--offenders 8]`. Prints the median wall time per
command (target: `--help` and `--version` under 0.5 s) with the modules it imported, then the slowest imports of
`ace-eval e2e --help` from `python -X importtime`. The load average is printed: on a busy machine every start-up
is slower.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from _timing import median_time

COMMANDS: list[list[str]] = [["--help"], ["--version"], ["e2e", "--help"]]
TARGET_S = 0.5
_RUN = "import sys; from ace_eval.cli import main; sys.argv = ['ace-eval', *sys.argv[1:]]; main()"
_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| *(\S+)$")


def ace_eval_command() -> list[str]:
    """The installed `ace-eval` script next to this Python, else `python -c` running the same entry point."""
    script = Path(sys.executable).with_name("ace-eval")
    return [str(script)] if script.is_file() else [sys.executable, "-c", _RUN]


def modules_loaded(args: list[str]) -> int:
    """How many modules `ace-eval ARGS` has imported when it exits."""
    code = "import atexit, sys; atexit.register(lambda: print(len(sys.modules), file=sys.stderr)); " + _RUN
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    return int(done.stderr.strip().splitlines()[-1])


def top_offenders(args: list[str], n: int) -> list[tuple[str, float]]:
    """The top-level packages with the largest cumulative import time (seconds) for `ace-eval ARGS`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _RUN, *args], capture_output=True, text=True, check=False
    )
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        match = _IMPORTTIME.match(line)
        if match is None or "." in match.group(3):  # a package's own line holds the time of its submodules
            continue
        name = match.group(3)
        totals[name] = max(totals.get(name, 0.0), int(match.group(2)) / 1e6)
    return sorted(totals.items(), key=lambda kv: -kv[1])[:n]


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="Runs per command (median reported).")
    parser.add_argument("--offenders", type=int, default=8, help="Slowest imports shown for `e2e --help`.")
    args = parser.parse_args()
    base = ace_eval_command()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {' '.join(base)}; {args.repeat} runs")
    print()
    print("| command | median | modules | under 0.5 s |")
    print("| --- | ---: | ---: | :---: |")
    for command in COMMANDS:

        def run(command: list[str] = command) -> None:
            subprocess.run([*base, *command], capture_output=True, check=True)

        seconds = median_time(run, args.repeat)
        ok = "yes" if seconds < TARGET_S else "no"
        print(f"| `ace-eval {' '.join(command)}` | {seconds:.3f} s | {modules_loaded(command)} | {ok} |")
    print()
    print("Slowest top-level packages imported by `ace-eval e2e --help` (cumulative, one run):")
    print()
    print("| package | import |")
    print("| --- | ---: |")
    for module, seconds in top_offenders(["e2e", "--help"], args.offenders):
        print(f"| {module} | {seconds:.3f} s |")


if __name__ == "__main__":
    main()
