"""Small helpers for what the commands print: counted nouns and colour that respects NO_COLOR."""

from __future__ import annotations

import os
from typing import Literal

__all__ = ["Tone", "plural", "tone"]

Tone = Literal["good", "bad", "warn"]
_COLOURS: dict[Tone, str] = {"good": "green", "bad": "red", "warn": "yellow"}


def plural(n: int, noun: str, plural_form: str | None = None) -> str:
    """`1 sample`, `2 samples`, `0 samples`; `plural_form` for irregular nouns (`plural(2, "entry", "entries")`)."""
    return f"{n} {noun if n == 1 else plural_form or noun + 's'}"


def tone(text: str, kind: Tone) -> str:
    """`text` coloured for its meaning (green good, red bad, yellow warn), unless `$NO_COLOR` is set.

    `click.echo` drops the colour itself when the output is not a terminal (a pipe, a file, a test runner).
    """
    if os.environ.get("NO_COLOR"):
        return text
    import click

    return click.style(text, fg=_COLOURS[kind], bold=True if kind == "bad" else None)
