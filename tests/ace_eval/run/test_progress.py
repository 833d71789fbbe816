"""The progress bar: counts, errors and times on stderr; `--verbose` lines; silent off a terminal."""

from __future__ import annotations

import io
import threading

from ace_eval.run.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_shows_counts_errors_and_times_on_a_terminal() -> None:
    out = Terminal()
    with Progress("train", 4, initial=1, initial_errors=1, file=out) as bar:
        bar.advance(line="a ok")
        bar.advance(error=True, line="b ERROR")
    text = out.getvalue()
    assert "3/4" in text and "errors=2" in text
    assert "<" in text  # elapsed<remaining
    assert "a ok" not in text  # per-item lines only with verbose
    assert (bar.done, bar.errors) == (3, 2)


def test_verbose_lines_are_printed_without_a_terminal_and_the_bar_is_not() -> None:
    out = io.StringIO()
    with Progress("train", 2, verbose=True, file=out) as bar:
        bar.advance(line="demo:1  epoch 0  ok  ADD context-00001")
        bar.note("resuming")
        bar.advance(error=True, line="demo:2  epoch 0  ERROR  ValueError: x")
    assert out.getvalue().splitlines() == [
        "[1/2] demo:1  epoch 0  ok  ADD context-00001",
        "resuming",
        "[2/2] demo:2  epoch 0  ERROR  ValueError: x",
    ]


def test_advance_is_thread_safe() -> None:
    bar = Progress("x", 400, file=io.StringIO())

    def work() -> None:
        for i in range(100):
            bar.advance(error=i % 2 == 0)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    assert (bar.done, bar.errors) == (400, 200)


def test_first_errors_are_printed_once_per_kind_and_a_stopped_session_is_not_called_an_error() -> None:
    from ace_eval.run.progress import FirstErrors

    out = io.StringIO()
    with Progress("train", 4, file=out) as bar:
        first = FirstErrors(bar)
        first.see("stopped", "t1 epoch 0", "SkillManagerStopped: budget: request_limit of 2")
        first.see("stopped", "t2 epoch 0", "SkillManagerStopped: budget: request_limit of 2")
        first.see("other", "t3 epoch 0", "ReflectorError: no valid reflection")
    text = out.getvalue()
    assert text.count("stopped early on t1 epoch 0: SkillManagerStopped") == 1 and "t2" not in text
    assert "(further sessions stopped early are counted, not printed; --verbose prints each)" in text
    assert "error (stopped)" not in text
    assert "error (other) on t3 epoch 0: ReflectorError" in text


def test_off_a_terminal_a_line_is_written_every_heartbeat_and_at_the_end() -> None:
    """A log or CI sees progress on long work: `done/total` at most every `heartbeat` seconds, and the end."""
    out = io.StringIO()
    with Progress("collect", 3, file=out, heartbeat=0.0) as bar:
        bar.advance(line="task 1 trial 0  reward 0")
        bar.advance(error=True, line="task 2 trial 0  ERROR")
        bar.advance(line="task 3 trial 0  reward 1")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("collect: 1/3 done (00:0") and lines[0].endswith("last: task 1 trial 0  reward 0")
    assert lines[1].startswith("collect: 2/3 done, 1 errors (")
    assert lines[2].startswith("collect: 3/3 done, 1 errors (")


def test_off_a_terminal_fast_work_prints_nothing_and_show_false_is_silent() -> None:
    quick = io.StringIO()
    with Progress("collect", 3, file=quick, heartbeat=3600.0) as bar:
        for _ in range(3):
            bar.advance(line="x")
    assert quick.getvalue() == ""  # no line was due: the end adds none either
    silent = io.StringIO()
    with Progress("collect", 2, file=silent, show=False, heartbeat=0.0) as bar:
        bar.advance(line="x")
        bar.advance(line="y")
    assert silent.getvalue() == ""
