"""Redaction of secrets and personal data: provider keys, tokens, private keys, credentials in URLs, e-mails,
phone, card, IBAN and US social security numbers, replaced by typed placeholders such as `[REDACTED:ssn#1]`."""

from ace.redaction._detectors import BUILTIN_DETECTORS, Detector, iban_valid, luhn_valid
from ace.redaction._redactor import (
    NOT_IN_IDS,
    PLACEHOLDER,
    Finding,
    RedactionConfigError,
    RedactionSession,
    Redactor,
    count_kinds,
    id_placeholder,
    mask,
    secret_named,
)

__all__ = [
    "BUILTIN_DETECTORS",
    "NOT_IN_IDS",
    "PLACEHOLDER",
    "Detector",
    "Finding",
    "RedactionConfigError",
    "RedactionSession",
    "Redactor",
    "count_kinds",
    "iban_valid",
    "id_placeholder",
    "luhn_valid",
    "mask",
    "secret_named",
]
