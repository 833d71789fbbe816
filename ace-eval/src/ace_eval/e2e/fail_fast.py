"""What a failed run is: `RunFailedError` when every sample (or episode) failed, and which failed samples a resume
runs again. Stopping a run that keeps failing the same way, and the error itself, are `ace_eval.run.abort`."""

from __future__ import annotations

from ace_eval.e2e.training_results import SampleResult
from ace_eval.run.abort import RunFailedError

__all__ = ["RunFailedError", "retries_on_resume"]


def retries_on_resume(sample: SampleResult) -> bool:
    """Whether a resume with `retry_failed` runs `sample` again: it failed without applying an operation (running
    one that applied operations again would apply them twice)."""
    return sample.error is not None and not sample.operations
