"""The run folder and its record: lock, `run.json`, the samples journal, sessions, usage, spans and checkpoint.

`read_run(path)` reads a run folder into a typed `Run`, for every command that looks at one.
"""

from ace_eval.run.read import Run, RunSkillbook, RunSkillbookError, read_run

__all__ = ["Run", "RunSkillbook", "RunSkillbookError", "read_run"]
