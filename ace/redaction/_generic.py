"""The generic secret: a secret-named key (`secret`, `token`, `password`, `api_key`, ...) with a random-looking value,
whatever the provider (detect-secrets' KeywordDetector and gitleaks' generic-api-key find the same).

`AWS_SECRET_ACCESS_KEY=<39 characters>`, `OPENAI_API_KEY=<a key without its sk- prefix>`, `"client_secret": "..."`,
`secret: ...` (YAML): the value is redacted when it is at least `GENERIC_MIN_CHARS` long, holds a letter and a digit,
and has at least `GENERIC_MIN_ENTROPY` bits of Shannon entropy per character.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = [
    "GENERIC_MIN_CHARS",
    "GENERIC_MIN_ENTROPY",
    "GENERIC_NAME",
    "GENERIC_PATTERN",
    "GENERIC_SHAPE",
    "GENERIC_TRIGGERS",
    "random_value",
    "shannon_entropy",
]

GENERIC_MIN_CHARS = 16
"""Shortest value a secret-named key's value must have to be redacted as `generic_secret`."""
GENERIC_MIN_ENTROPY = 3.0
"""Lowest Shannon entropy, in bits per character, of such a value (random base64 or hex of 16 characters or more
has about 3.5 to 5.5)."""


def shannon_entropy(value: str) -> float:
    """Bits per character of `value`'s character distribution (0 for an empty string)."""
    if not value:
        return 0.0
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in Counter(value).values())


def random_value(value: str) -> bool:
    """A random-looking value: `GENERIC_MIN_CHARS` characters or more, `GENERIC_MIN_ENTROPY` bits per character or
    more, and a run of 8 letters and digits holding both (a count, a date, a sentence or an identifier made of words
    such as `bearer_access_token_v2` or `credit_card_4421486` is none)."""
    return (
        len(value) >= GENERIC_MIN_CHARS
        and any(_mixed(run) for run in _ALNUM_RUN.findall(value))
        and shannon_entropy(value) >= GENERIC_MIN_ENTROPY
    )


_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{8,}")


def _mixed(run: str) -> bool:
    return not run.isdigit() and not run.isalpha()


GENERIC_NAME = (
    r"(?i:secret|token|passw(?:or)?d|api[_.-]?key|access[_.-]?key|private[_.-]?key|credential|(?<![A-Za-z0-9])auth)"
    r"[A-Za-z0-9_.-]{0,30}\\?[\"']?[ \t]{0,3}[:=]?\Z"
)
"""A secret-named key right before the separator's last character: one of the key words, the rest of the name
(`SECRET_ACCESS_KEY`, `api_key_v2`; `auth` only at the start of a name, not in `oauth` or `author`), its closing
quote (`"key"`, escaped JSON `\\"key\\"`), spaces, and the first character of `:=` or `=>`."""
GENERIC_PATTERN = (
    r"[=:>][ \t]{0,3}\\?[\"']?"
    r"(?=[A-Za-z0-9_+/.~-]*?(?:[A-Za-z]\d|\d[A-Za-z]))"  # a letter next to a digit: `random_value` needs one
    r"([A-Za-z0-9_+/.~-]{16,}=*)(?![A-Za-z0-9_+/.~-])"
)
"""The separator's last character (`=`, `:`, `:=`, `=>`), spaces, the value's opening quote, the value."""
GENERIC_TRIGGERS = (b"secret", b"token", b"key", b"credential", b"auth")
"""Lower-case words one of which every secret name holds (`passw`-names are the `password` detector's: it finds their
values whatever their length)."""
GENERIC_SHAPE = r"[=:>][\"'\\ \t]{0,5}[-A0a-z_+/.~]{16}"
"""The separator's last character, then 16 characters a value is made of, in the text's shape (prose has no
16-letter words): the gate before the pattern is searched."""
