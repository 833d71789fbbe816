"""The page of a trial (`ace-eval report TRIAL_DIR`): the scoreboard, a task x candidate heatmap of dev rewards, the
Pareto set, the gate's table, the winner's test result, and each candidate's run page one click away."""

from __future__ import annotations

import os
from pathlib import Path

import ace_eval
from ace.core.insight_source import utc_now
from ace.core.storage import atomic_write, bytes_writer
from ace_eval.gate import gate_rows, pass_hat_k_cells
from ace_eval.report.read import read_report_run
from ace_eval.report.render import environment, write_report
from ace_eval.trials import SCOREBOARD_FILE, Scoreboard, read_scoreboard

__all__ = ["is_trial", "render_trial_page", "write_trial_page"]


def is_trial(path: Path) -> bool:
    """Whether `path` is a trial folder (it holds `scoreboard.json`)."""
    return (path / SCOREBOARD_FILE).is_file()


def _heat(reward: float) -> str:
    """A cell's background: red (0) through white to green (1)."""
    hue = 120 * max(0.0, min(1.0, reward))
    return f"background: hsl({hue:.0f}, 60%, 80%)"


def render_trial_page(board: Scoreboard, runs: dict[str, str], title: str) -> str:
    """The HTML page of `board`; `runs` maps a candidate to the link of its run's page."""
    heat = [
        (task, [(sum(r) / len(r) if (r := c.dev.per_task.get(task)) else None) for c in board.candidates])
        for task in board.dev_tasks
    ]
    return (
        environment()
        .get_template("trial.html.j2")
        .render(
            title=title,
            board=board,
            runs=runs,
            heat=heat,
            heat_style=_heat,
            gate_rows=gate_rows(board.gate),
            pass_k=pass_hat_k_cells(board.gate),
            generated_at=utc_now(),
            version=ace_eval.__version__,
        )
    )


def write_trial_page(trial: Path, output: Path) -> int:
    """Write each candidate's run page (`report.html` in its run folder) and the trial's page at `output`."""
    board = read_scoreboard(trial / SCOREBOARD_FILE)
    runs: dict[str, str] = {}
    for candidate in board.candidates:
        run_dir = Path(candidate.run_dir)
        if (run_dir / "run.json").is_file():
            write_report([read_report_run(run_dir)], run_dir / "report.html")
            runs[candidate.name] = os.path.relpath(run_dir / "report.html", output.parent.resolve())
    data = render_trial_page(board, runs, str(trial)).encode("utf-8")
    atomic_write(output, bytes_writer(data))
    return len(data)
