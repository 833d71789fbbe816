"""What a failed run is: `RunFailedError` when every sample (or episode) failed, and which failed samples a resume
runs again. Stopping a run that keeps failing the same way, and the error itself, are `ace_eval.run.abort`."""

from __future__ import annotations

from ace_eval.e2e.training_results import SampleResult, TrainingResult
from ace_eval.run.abort import RunFailedError

__all__ = ["RunFailedError", "refuse_nothing_learned", "retries_on_resume"]


def retries_on_resume(sample: SampleResult) -> bool:
    """Whether a resume with `retry_failed` runs `sample` again: it failed without applying an operation (running
    one that applied operations again would apply them twice)."""
    return sample.error is not None and not sample.operations


def refuse_nothing_learned(result: TrainingResult) -> None:
    """Raise `RunFailedError` when every sample of the training failed and none made an edit (edits made before a
    stop stand), naming the budget flags when every session stopped without one, else the first error."""
    failed = result.errors
    learned = any(sample.operations for sample in result.samples)
    if not result.samples or len(failed) != len(result.samples) or learned:
        return
    stopped = [f for f in failed if f.error_kind == "stopped"]
    if len(stopped) == len(failed):
        raise RunFailedError(
            f"every skill-manager session stopped without an edit ({len(failed)} of {len(result.samples)}), "
            f"nothing was learned: raise --sm-request-limit or --sm-tool-calls, or use a stronger "
            f"--skill-manager-model; the first stop: {failed[0].error}"
        )
    which = f"; {len(stopped)} of them stopped without an edit" if stopped else ""
    raise RunFailedError(
        f"every sample failed ({len(failed)} of {len(result.samples)}{which}), nothing was learned; the first "
        f"error: {next((f for f in failed if f.error_kind != 'stopped'), failed[0]).error}"
    )
