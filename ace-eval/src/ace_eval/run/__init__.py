"""The run folder and its record: lock, `run.json`, the samples journal, sessions, usage, spans and checkpoint.

`read_run(path)` reads a run folder into a typed `Run`, for every command that looks at one; its `record` is the
folder's `run.json` as a `RunRecord` (`load_run_record` reads that file alone).
"""

from ace_eval.run.phases import BenchmarkRecord, PhaseRecord, TaskResult
from ace_eval.run.read import Run, RunSkillbook, RunSkillbookError, read_run
from ace_eval.run.record import RunRecord, RunRecordError, load_run_record

__all__ = [
    "BenchmarkRecord",
    "PhaseRecord",
    "Run",
    "RunRecord",
    "RunRecordError",
    "RunSkillbook",
    "RunSkillbookError",
    "TaskResult",
    "load_run_record",
    "read_run",
]
