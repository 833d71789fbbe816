"""Logfire scrubbing that also runs the redactor, so spans sent to Logfire carry placeholders, not secrets.

Logfire searches every span attribute (keys, string values, JSON inside strings) with one regular expression and
calls our callback with the value a match was found in. We add one pattern, `(?=(?P<ace_redaction>...))` plus
one character, which matches wherever a detector might: a zero-width look-ahead, so a value that is entirely a
secret is not taken for "the whole value is the sensitive word" (which Logfire keeps as it is). The callback
redacts the value; for Logfire's own patterns (password, api key, session, ...) it then keeps Logfire's rule.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ace.redaction._redactor import Redactor

if TYPE_CHECKING:
    import logfire

__all__ = ["GROUP", "keep_everyday_words", "scrubbing_options", "trigger_pattern"]

GROUP = "ace_redaction"
_EVERYDAY = re.compile(r"session|credit[ _-]?card", re.IGNORECASE)


def trigger_pattern(redactor: Redactor) -> str:
    """One pattern that matches (zero width, then one character) wherever any detector of `redactor` might."""
    alternatives = "|".join(f"(?:{d.pattern.pattern})" for d in redactor.detectors)
    return f"(?=(?P<{GROUP}>(?-i:{alternatives})))[\\s\\S]"


def scrubbing_options(redactor: Redactor | None) -> logfire.ScrubbingOptions:
    """`logfire.ScrubbingOptions` with ACE's callback: everyday words kept (`keep_everyday_words`), and with a
    `redactor` every detected secret replaced by its placeholder."""
    import logfire

    if redactor is None:
        return logfire.ScrubbingOptions(callback=keep_everyday_words)

    def callback(match: logfire.ScrubMatch) -> Any:
        value = match.value
        if isinstance(value, str):
            redacted: Any = redactor.redact_text(value)
        else:
            redacted = redactor.redact_data(value, numbered=False)[0]
        if match.pattern_match.group(GROUP) is not None:
            return redacted
        return keep_everyday_words(logfire.ScrubMatch(match.path, redacted, match.pattern_match))

    return logfire.ScrubbingOptions(callback=callback, extra_patterns=[trigger_pattern(redactor)])


def keep_everyday_words(match: logfire.ScrubMatch) -> Any:
    """Logfire scrubbing callback: words that are ordinary in agent traces ("session", "credit card") do not
    redact a value, so opted-in prompts about airline payments stay readable.

    Any other sensitive pattern (password, api key, token, ...) in the same value still redacts it.
    """
    found, value = match.pattern_match, match.value
    if _EVERYDAY.fullmatch(found.group(0)) and isinstance(value, str) and not found.re.search(_EVERYDAY.sub("", value)):
        return value
    return None
