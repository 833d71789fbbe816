"""Small helpers for what the commands print: counted nouns, colour that respects NO_COLOR, and text from traces
made safe for a terminal."""

from __future__ import annotations

import os
import re
from typing import Literal

__all__ = ["Tone", "plural", "printable", "tone"]

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


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters but newline and tab (C0, DEL, C1) and the bidirectional overrides."""
_STYLE = re.compile(r"(\x1b\[[0-9;]*m)")
"""A colour (SGR) sequence, as `tone` writes them."""


def printable(text: str, *, keep_style: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\u202e`), newline and tab kept: what a
    command prints of a trace (ids, keys, messages) can neither move the cursor, clear the screen, set the window
    title nor write the clipboard (OSC 52). `keep_style=True` keeps colour sequences (a text `tone` coloured)."""
    if _CONTROL.search(text) is None:
        return text
    if keep_style:
        parts = _STYLE.split(text)  # the colour sequences at the odd places
        return "".join(part if i % 2 else _CONTROL.sub(_escaped, part) for i, part in enumerate(parts))
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
