"""`ace-eval report` on a large scripted run: the time to write the page, its size, and the time Chromium takes to
open it and show a skill's evidence; prints a table.

    .venv/bin/python benchmarks/report.py [--samples 1000] [--keep DIR]

The run is `ace-eval e2e` over the demo collection (10 traces) for `samples / 10` epochs on the scripted models
of the tests (`tests/_e2e_support.py`: no network, a reflection and a three-call skill-manager session per
sample). Targets for 1,000 samples: the report in under 5 s and under 10 MB. The browser timing needs Chromium
(`apt-get install -y chromium`) and Playwright; without them that row says so.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _e2e_support import scripted_injections  # noqa: E402

from ace_eval.e2e import runner  # noqa: E402
from ace_eval.e2e.config import E2ESettings  # noqa: E402
from ace_eval.report import read_report_run, write_report  # noqa: E402

DEMO = ROOT / "examples" / "demo-collection"


def scripted_run(out: Path, samples: int) -> Path:
    """A run folder of `samples` samples (10 traces x samples / 10 epochs) on the scripted models."""
    settings = E2ESettings(traces=DEMO, no_benchmark=True, output_dir=out, epochs=max(1, samples // 10), max_workers=1)
    return runner.run_e2e(settings, injections=scripted_injections()).folder.path


def browser_seconds(page_path: Path) -> tuple[float, float, float] | str:
    """Seconds until the page is interactive, until a click on a sample shows its transcript, and until a click
    on a skill shows its evidence."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return "no chromium (apt-get install -y chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "no playwright (pip install playwright)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_selector("table.samples tbody tr", state="attached")
        loaded = time.perf_counter() - start
        page.click("#tabs button[data-tab=samples]")
        start = time.perf_counter()
        page.locator("table.samples tbody tr").last.click()
        page.wait_for_selector(".sample-detail .transcript")
        sample = time.perf_counter() - start
        page.click("#tabs button[data-tab=learning]")
        start = time.perf_counter()
        page.locator(".skill-item").last.click()
        page.wait_for_selector(".skill-detail .occurrences")
        skill = time.perf_counter() - start
        browser.close()
    return loaded, sample, skill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="Write the run and the page here instead of a temporary folder.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        start = time.perf_counter()
        folder = scripted_run(base / "runs", args.samples)
        run_s = time.perf_counter() - start
        page = base / "report.html"
        start = time.perf_counter()
        runs = [read_report_run(folder)]
        read_s = time.perf_counter() - start
        size = write_report(runs, page)
        total_s = time.perf_counter() - start
        opened = browser_seconds(page)
        samples = len(runs[0].view.samples)
        skills = len(runs[0].skillbook.skills(include_inactive=True)) if runs[0].skillbook is not None else 0
        print(f"scripted run: {samples} samples, {skills} skills, {run_s:.1f} s")
        print(f"{'measure':<34} {'value':>12}  target")
        print(f"{'report: read the folder':<34} {read_s:>10.2f} s")
        print(f"{'report: read + render + write':<34} {total_s:>10.2f} s  < 5 s for 1,000 samples")
        print(f"{'page size':<34} {size / 1e6:>9.2f} MB  < 10 MB for 1,000 samples")
        if isinstance(opened, str):
            print(f"{'chromium':<34} {opened}")
        else:
            print(f"{'chromium: open until interactive':<34} {opened[0]:>10.2f} s")
            print(f"{'chromium: click a sample -> trace':<34} {opened[1]:>10.2f} s")
            print(f"{'chromium: click a skill -> evidence':<34} {opened[2]:>10.2f} s")


if __name__ == "__main__":
    main()
