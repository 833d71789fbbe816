"""The checks a detector's match must pass to count (a card number's Luhn digit, an IBAN's checksum, an AWS
secret key's shape among path segments, ...): what tells a secret from text that only looks like one."""

from __future__ import annotations

import base64
import re

__all__ = [
    "ACCESS_KEY_ID",
    "WRAPPED",
    "base64_secret",
    "card",
    "carries_access_key",
    "compact",
    "digits_only",
    "iban_valid",
    "luhn_valid",
    "mixed_case_token",
    "mixed_token",
    "phone",
    "secret_key_alone",
    "slashed_secret",
    "ssn",
    "wrapped_key",
]


def luhn_valid(number: str) -> bool:
    """The Luhn checksum of a card number (digits only, separators ignored)."""
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for position, digit in enumerate(reversed(digits)):
        if position % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return bool(digits) and total % 10 == 0


def iban_valid(iban: str) -> bool:
    """ISO 13616 mod-97 check of an IBAN (spaces ignored)."""
    compact = iban.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    try:
        return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1
    except ValueError:
        return False


def card(value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    # issuer prefixes 2-6 (Mastercard, Amex/Diners/JCB, Visa, Discover); leaves out 13-digit ms timestamps
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)


def digits_only(value: str) -> str:
    return re.sub(r"\D", "", value)


def mixed_token(value: str) -> bool:
    """A random-looking key: letters and digits both (so `sk-learn-compatible-estimators` is not one)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def base64_secret(value: str) -> bool:
    """40 base64 characters with upper, lower, digit and `/` or `+`: how AWS secret keys look (SHA-1 hex does not)."""
    return (
        len(value) == 40
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and ("/" in value or "+" in value)
    )


ACCESS_KEY_ID = re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}")
"""An AWS access key id, whole (the `aws_access_key` detector's shape)."""


def carries_access_key(value: str) -> bool:
    """Whether one of the `/`-separated segments of `value` is an AWS access key id."""
    return "/" in value and any(ACCESS_KEY_ID.fullmatch(segment) for segment in value.split("/"))


def secret_key_alone(value: str) -> bool:
    """A lone 40-character token of mixed case and digits that is not a path around an access key id."""
    return mixed_case_token(value) and not carries_access_key(value)


def slashed_secret(run: str) -> tuple[int, int] | None:
    """Where an AWS secret key is in a run of base64 characters with `/` or `+`: all of it, or 40 characters of it
    between `/`s (`bucket/<key>/x`); a path such as `src/Main1.java` is none, and so is a path with an access key id
    as one of its segments (`x/AKIA.../y`: the access key's own detector names it)."""
    for start in (0, *(i + 1 for i, c in enumerate(run) if c == "/")):
        end = start + 40
        if end > len(run):
            return None
        candidate = run[start:end]
        if carries_access_key(candidate):
            continue
        if (end == len(run) or run[end] == "/") and base64_secret(candidate):
            return start, end
    return None


def compact(value: str) -> str:
    return value.replace(" ", "").upper()


def mixed_case_token(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


def phone(value: str) -> bool:
    return 8 <= len(digits_only(value)) <= 15


def ssn(value: str) -> bool:
    """A US social security number the SSA can issue: area not 000, 666 or 900-999, group not 00, serial not 0000."""
    digits = digits_only(value)
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def wrapped_key(value: str) -> bool:
    """Base64 that decodes to a provider key (`sk-proj-...`, `AKIA...`, `ghp_...`): a key hidden in a config blob."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return False
    return decoded.startswith(WRAPPED) and mixed_token(decoded)


WRAPPED = ("sk-", "AKIA", "ghp_", "github_pat_", "xox")
