"""The fix an error names, in the words of `ace-eval`: flags and settings, never the library's Python names.

The library's messages end with advice for library users (`SimpleReflector(output_retries=...)`, pydantic-ai's
"increase the `max_tokens` model setting"); a sample's error is recorded with that advice replaced by the flag
that does it for the model in use.
"""

from __future__ import annotations

import re

__all__ = ["cli_advice", "conflict_note"]

_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"use a stronger reflector model or raise SimpleReflector\(output_retries=\.\.\.\)"),
        "use a stronger --reflector-model, or allow more retries with --reflector-retries N",
    ),
    (
        re.compile(r"Increase the `max_tokens` model setting, or simplify the prompt[^.)]*(?:\.)?", re.IGNORECASE),
        "Raise --max-output-tokens (the embedded model 'local' writes at most 1024 tokens: keep its small profile, "
        "--profile small, whose outputs are short, or use a hosted model).",
    ),
    (
        re.compile(r"repeated identical tool calls \(last: ([^)]*)\); the session was ended"),
        r"repeated identical tool calls (last: \1); the session was ended (the small profile, --profile small, "
        r"allows one tool call per session; or use a stronger --skill-manager-model)",
    ),
)


def cli_advice(message: str) -> str:
    """`message` with each piece of library advice replaced by the `ace-eval` flag that does it."""
    for pattern, replacement in _REWRITES:
        message = pattern.sub(replacement, message)
    return message


_CONFLICT = re.compile(r"^\w+ was not applied: (?:another session|while you worked, another session)")


def conflict_note(reason: str, workers: int, applied: int) -> str:
    """`reason` of a refused skill-manager call, with, for a collision with a concurrent session, why sessions ran
    at once and what became of the lesson: redone in the same session (`applied` edits of the sample), or lost."""
    if not _CONFLICT.match(reason):
        return reason
    fate = (
        f"the session redid it: {applied} edit(s) of this sample are in the skillbook"
        if applied
        else "the session ended without redoing it: this trace's lesson is not in the skillbook (lost for this "
        "epoch; a hosted --skill-manager-model usually redoes it, and --epochs 2 gives it another pass)"
    )
    return (
        f"{reason} [{workers} samples ran at once (--max-workers; the embedded model's small profile runs 2, one "
        f"core each), so skill-manager sessions shared the skillbook and collided; {fate}. --max-workers 1 or "
        "--sm-sessions ordered avoids collisions.]"
    )
