"""The built-in detectors: one regular expression per kind of secret or personal datum, with its check.

Hand-written because no offline library fits (see docs/performance.md, Redaction, for the measurement):
detect-secrets' plugins cost ~120-270 ms per tau-bench trace, have no e-mail, phone, card or IBAN detector, and
miss Anthropic, Google and current OpenAI keys. Where its regexes are good (AWS, GitHub, Slack, Stripe) ours
follow them. Each detector has a cheap `trigger` substring so a text without it skips the regex entirely.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import AnyStr

from ace.redaction._generic import GENERIC_NAME, GENERIC_PATTERN, GENERIC_SHAPE, GENERIC_TRIGGERS, random_value

__all__ = [
    "BUILTIN_DETECTORS",
    "DIGIT",
    "Detector",
    "any_in",
    "fold",
    "iban_valid",
    "luhn_valid",
    "shape",
]

DIGIT = re.compile(r"\d")
"""Any digit, of any script: what opens a detector whose triggers are the digits."""

Check = Callable[[str], bool]


@dataclass(frozen=True, kw_only=True)
class Detector:
    """One kind of secret: where it is (`pattern`, its `group`), and a `check` that the match really is one."""

    kind: str
    """Placeholder name, e.g. `aws_access_key` in `[REDACTED:aws_access_key#1]`."""
    pattern: re.Pattern[str]
    group: int = 0
    """The group that is the secret (e.g. only the token after `Bearer `)."""
    check: Check | None = None
    """Refuses look-alikes (a failed Luhn or mod-97 check, a token without digits)."""
    triggers: tuple[str, ...] = ()
    """Substrings one of which every match contains; a text with none of them is not searched."""
    folded: tuple[bytes, ...] = ()
    """Lower-case key words one of which the text's lower-cased UTF-8 bytes (`fold`) must hold: triggers whatever
    the case (`secret` for `SECRET`, `Secret`, `client_secret`), a few byte searches instead of a literal per case."""
    after: str | None = None
    """Searched only once a match of this kind was seen in the same text or session (a bare AWS secret)."""
    shapes: tuple[str, ...] = ()
    """Like `triggers`, in the text's shape (digits as `0`, capitals as `A`, see `shape`): `0000 0000` for a card
    number, `AA` for an IBAN's country code."""
    shape_pattern: str = ""
    """A regular expression searched in the text's shape like `shapes` (nine digits with no letter or digit around)."""

    shape_gate: re.Pattern[bytes] | None = field(init=False, default=None)
    literals: tuple[str, ...] = field(init=False, default=())
    """The `triggers` that are not single digits (looked up with `in`)."""
    on_digit: bool = field(init=False, default=False)
    """Whether any digit in the text opens this detector (its triggers include the digits)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "literals", tuple(t for t in self.triggers if not t.isdigit()))
        object.__setattr__(self, "on_digit", any(t.isdigit() for t in self.triggers))
        gates = [re.escape(s.encode()) for s in self.shapes] + (
            [self.shape_pattern.encode()] if self.shape_pattern else []
        )
        if gates:
            object.__setattr__(self, "shape_gate", re.compile(b"|".join(gates)))

    left: re.Pattern[str] | None = None
    """Extends a match to the left: searched in the 64 characters before it, ending where the match starts."""
    preceded: re.Pattern[str] | None = None
    """Must match in the 64 characters before a match (ending where it starts), else the match is none: the key a
    value stands after (the pattern starts at the separator, which the engine finds faster than a key word)."""
    normalize: Callable[[str], str] | None = None
    """Maps spellings of one value to one key, so `4111 1111...` and `41111111...` get the same placeholder."""
    narrow: Callable[[str], tuple[int, int] | None] | None = None
    """The span of the secret inside a match, `None` for none (instead of `check`): a key among path segments."""
    fallback: bool = False
    """Kept only where no other detector's match overlaps it: the generic secret after a key name, which a specific
    detector (an AWS secret key, a password) names better."""
    retry: bool = False
    """After a match its check refuses, search again from its next character, not its end: a card number right
    after a longer run of digits (`12-4111...`) is still found. Only for patterns with a bounded match length."""


_SHAPE = bytes.maketrans(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"0" * 10 + b"A" * 26)


def shape(text: str) -> bytes:
    """The text with every ASCII digit as `0` and capital as `A` (as UTF-8 bytes): one fast pass that
    `Detector.shapes` are looked up in."""
    return text.encode("utf-8", "surrogatepass").translate(_SHAPE)


def fold(text: str) -> bytes:
    """The text's UTF-8 bytes with ASCII capitals in lower case: where `Detector.folded` are looked up."""
    return text.encode("utf-8", "surrogatepass").lower()


def any_in(literals: tuple[AnyStr, ...], text: AnyStr) -> bool:
    """Whether one of `literals` is in `text`: how a detector's triggers are looked up."""
    for literal in literals:  # noqa: SIM110 (a plain loop: any(genexpr) costs more than the searches)
        if literal in text:
            return True
    return False


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


def _card(value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    # issuer prefixes 2-6 (Mastercard, Amex/Diners/JCB, Visa, Discover); leaves out 13-digit ms timestamps
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)


def _digits_only(value: str) -> str:
    return re.sub(r"\D", "", value)


def _mixed_token(value: str) -> bool:
    """A random-looking key: letters and digits both (so `sk-learn-compatible-estimators` is not one)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _base64_secret(value: str) -> bool:
    """40 base64 characters with upper, lower, digit and `/` or `+`: how AWS secret keys look (SHA-1 hex does not)."""
    return (
        len(value) == 40
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and ("/" in value or "+" in value)
    )


_ACCESS_KEY_ID = re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}")
"""An AWS access key id, whole (the `aws_access_key` detector's shape)."""


def _carries_access_key(value: str) -> bool:
    """Whether one of the `/`-separated segments of `value` is an AWS access key id."""
    return "/" in value and any(_ACCESS_KEY_ID.fullmatch(segment) for segment in value.split("/"))


def _secret_key_alone(value: str) -> bool:
    """A lone 40-character token of mixed case and digits that is not a path around an access key id."""
    return _mixed_case_token(value) and not _carries_access_key(value)


def _slashed_secret(run: str) -> tuple[int, int] | None:
    """Where an AWS secret key is in a run of base64 characters with `/` or `+`: all of it, or 40 characters of it
    between `/`s (`bucket/<key>/x`); a path such as `src/Main1.java` is none, and so is a path with an access key id
    as one of its segments (`x/AKIA.../y`: the access key's own detector names it)."""
    for start in (0, *(i + 1 for i, c in enumerate(run) if c == "/")):
        end = start + 40
        if end > len(run):
            return None
        candidate = run[start:end]
        if _carries_access_key(candidate):
            continue
        if (end == len(run) or run[end] == "/") and _base64_secret(candidate):
            return start, end
    return None


def _compact(value: str) -> str:
    return value.replace(" ", "").upper()


def _mixed_case_token(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


def _phone(value: str) -> bool:
    return 8 <= len(_digits_only(value)) <= 15


def _ssn(value: str) -> bool:
    """A US social security number the SSA can issue: area not 000, 666 or 900-999, group not 00, serial not 0000."""
    digits = _digits_only(value)
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _wrapped_key(value: str) -> bool:
    """Base64 that decodes to a provider key (`sk-proj-...`, `AKIA...`, `ghp_...`): a key hidden in a config blob."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return False
    return decoded.startswith(_WRAPPED) and _mixed_token(decoded)


_WRAPPED = ("sk-", "AKIA", "ghp_", "github_pat_", "xox")
_DIGITS = tuple("0123456789")
_GITHUB = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")
_B64_40 = r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9+]|/[A-Za-z0-9/+])"
"""40 base64 characters, then no more of them (a `/` that ends the run is a boundary, as in a path)."""
_B64_40_ALONE = r"(?<![A-Za-z0-9+])(?<![A-Za-z0-9/+]/)" + _B64_40
_AWS_KEYWORD = (  # also `aws.secretKey`, `aws.credentials.secret-key`
    r"(?i:secret[_ .-]?access[_ .-]?key|aws[_ .-]?secret[\w .-]{0,20}|aws[\w .-]{0,20}(?:secret|key)[\w .-]{0,10})"
)
# a keyword, then `=`, `: `, `": "`, `\": \"` or a space (`export KEY=v`, `"KEY": "v"`, `KEY: v`, `--key v`)
_SEPARATOR = r"[\"'\\\s:=]{1,8}"
_NUMBER_START = r"(?<![A-Za-z0-9]{d})(?<!\d\.{d})"
"""Where a number may start: not inside a word or a longer number, nor after a decimal point (`0.4111...`); after
`-`, `_`, `/`, `=`, `:` or a quote it may (`order-4111...`, `id_536228145`). `{d}` is the pattern's first token."""
_NUMBER_END = r"(?![A-Za-z0-9]|[.-]\d)"
"""Where a number ends: not before a letter or a digit, nor before `.5` or `-5` (a longer number); `-x` may follow."""


def _d(
    kind: str,
    pattern: str,
    *triggers: str,
    group: int = 0,
    folded: tuple[bytes, ...] = (),
    check: Check | None = None,
    shapes: tuple[str, ...] = (),
    shape_pattern: str = "",
    after: str | None = None,
    left: str | None = None,
    preceded: str | None = None,
    normalize: Callable[[str], str] | None = None,
    narrow: Callable[[str], tuple[int, int] | None] | None = None,
    retry: bool = False,
    fallback: bool = False,
) -> Detector:
    return Detector(
        kind=kind,
        pattern=re.compile(pattern),
        group=group,
        check=check,
        triggers=triggers,
        folded=folded,
        shapes=shapes,
        shape_pattern=shape_pattern,
        after=after,
        left=re.compile(left) if left is not None else None,
        preceded=re.compile(preceded) if preceded is not None else None,
        normalize=normalize,
        narrow=narrow,
        retry=retry,
        fallback=fallback,
    )


BUILTIN_DETECTORS: tuple[Detector, ...] = (
    # order matters only for two matches of the same span: the first detector names it
    _d(
        "private_key",
        r"-----BEGIN[A-Z ]{0,30} PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[^\x00]*?-----END[A-Z ]{0,30} PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)",
        "PRIVATE KEY",
    ),
    _d("jwt", r"eyJ(?<![A-Za-z0-9]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", "eyJ"),
    _d("anthropic_key", r"sk-ant-(?<![A-Za-z0-9]sk-ant-)[A-Za-z0-9_-]{20,}", "sk-ant-", check=_mixed_token),
    _d(
        "openai_key",
        r"sk-(?<![A-Za-z0-9]sk-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}",
        "sk-",
        check=_mixed_token,
    ),
    _d(
        "aws_access_key",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?<![A-Za-z0-9]....)[A-Z0-9]{16}(?![A-Za-z0-9])",
        "A3T",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
    ),
    _d(
        "aws_secret_key",
        _AWS_KEYWORD + _SEPARATOR + r"([A-Za-z0-9/+]{40,})(?![A-Za-z0-9/+])",  # all of a longer run: `KEY=v/x`
        "ecret",
        "ECRET",
        "aws",
        "AWS",
        group=1,
    ),
    _d(
        "aws_secret_key",
        r"[/+][A-Za-z0-9/+]*(?![A-Za-z0-9/+])",
        "/",
        "+",
        narrow=_slashed_secret,
        # 40 of [A-Za-z0-9/+] in a row around the `/` or `+`: 20 of them before it, or 20 after
        shape_pattern=r"[/+](?:(?<=[A0a-z/+]{21})|(?=[A0a-z/+]{20}))",
        left=r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{0,40}\Z",
    ),
    _d("aws_secret_key", _B64_40_ALONE, check=_secret_key_alone, after="aws_access_key"),
    _d("google_api_key", r"AIza(?<![A-Za-z0-9]AIza)[0-9A-Za-z_-]{35}", "AIza"),
    _d("github_token", r"(?:gh[pousr]_(?<![A-Za-z0-9]gh._)[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", *_GITHUB),
    _d("gitlab_token", r"glpat-[A-Za-z0-9_-]{20,}", "glpat-"),
    _d("slack_token", r"xox[abposre]-(?<![A-Za-z0-9]xox.-)[A-Za-z0-9-]{10,}", "xox"),
    _d("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}", "hooks.slack.com"),
    _d(
        "stripe_key",
        r"(?:sk|rk|pk)_(?:live|test)_(?<![A-Za-z0-9].k_(?:live|test)_)[A-Za-z0-9]{16,}",
        "_live_",
        "_test_",
    ),
    _d("huggingface_token", r"hf_(?<![A-Za-z0-9]hf_)[A-Za-z0-9]{30,}", "hf_", check=_mixed_token),
    _d("npm_token", r"npm_(?<![A-Za-z0-9]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm_"),
    _d("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,}", "pypi-"),
    _d("sendgrid_key", r"SG\.(?<![A-Za-z0-9]SG\.)[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", "SG."),
    _d(
        "bearer_token",
        r"(?i:(?<![A-Za-z0-9])bearer)\s+([A-Za-z0-9._~+/-]{16,}=*)",
        "earer",
        "EARER",
        group=1,
        check=_mixed_token,
    ),
    _d(
        "basic_auth",
        r"(?i:(?<![A-Za-z0-9])authorization(?![A-Za-z0-9])[\"'\\:=\s]{1,7}basic)\s+([A-Za-z0-9+/]{8,}=*)",
        "uthorization",
        "UTHORIZATION",
        group=1,
    ),
    _d("url_credentials", r"://(?<=[A-Za-z0-9+.-]://)([^\s:/?#@\"'<>\x00]+:[^\s/?#@\"'<>\x00]+)@", "://", group=1),
    _d(
        "email",
        r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*"
        r"\.[A-Za-z]{2,24}(?![A-Za-z0-9])",
        "@",
        left=r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}\Z",
        normalize=str.lower,
    ),
    _d(  # PASSWORD=v, export DB_PASSWORD=v, "password": "v", passwd: v, PGPASSWORD=v, \"pwd\": \"v\", pwd => v
        "password",
        r"(?i:(?<![A-Za-z0-9])(?:pg)?(?:password|passwd|pwd)(?![A-Za-z0-9]))\\?[\"']?\s{0,3}[=:]>?\s{0,3}\\?[\"']?"
        r"([^\s\"'<>,;&\\\x00]{4,})",
        "assw",
        "ASSW",
        "pwd",
        "PWD",
        "Pwd",
        group=1,
    ),
    _d(  # --password v, --db-passwd v
        "password",
        r"--(?:[A-Za-z0-9]+[_-])*(?i:password|passwd)[ =]([^\s\"'<>,;&\\\x00]{4,})",
        "--",
        group=1,
    ),
    _d(  # AWS_SECRET_ACCESS_KEY=v (any length), OPENAI_API_KEY=v (no sk-), "client_secret": "v", secret: v
        "generic_secret",
        GENERIC_PATTERN,
        folded=GENERIC_TRIGGERS,
        group=1,
        preceded=GENERIC_NAME,
        fallback=True,
        check=random_value,
        shape_pattern=GENERIC_SHAPE,
    ),
    _d(
        "base64_key",
        r"(?<![A-Za-z0-9+])(?:c2st|QUtJQ|Z2hwX|Z2l0aHViX3BhdF|eG94)[A-Za-z0-9+/]{18,}={0,2}",
        "c2st",
        "QUtJQ",
        "Z2hwX",
        "Z2l0aHViX3BhdF",
        "eG94",
        check=_wrapped_key,
    ),
    _d(
        "iban",
        r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])",
        *_DIGITS,
        check=iban_valid,
        normalize=_compact,
        # the country code, two check digits (of any script: `\d`, as UTF-8 bytes above 0x7f), eight more characters
        shape_pattern=r"AA(?:0|[\x80-\xff]+){2}(?: ?[A0]{4}){2}",
    ),
    _d(
        "card_number",
        r"[2-6]"
        + _NUMBER_START.format(d="[2-6]")
        + r"(?:(?:[ -]?\d){12,18}|\d{3}(?:\.\d{4}){3}(?:\.\d{1,3})?)"
        + _NUMBER_END,
        *_DIGITS,
        check=_card,
        retry=True,
        normalize=_digits_only,
        shapes=("0000000000000", "0000 0000", "0000-0000", "0000 000000", "0000.0000.0000"),
    ),
    _d(
        "phone",
        r"\+(?<![A-Za-z0-9+]\+)\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}" + _NUMBER_END,
        "+",
        check=_phone,
        retry=True,
        normalize=_digits_only,
    ),
    _d(
        "phone",
        r"(?:\(\d{3}\) ?|\d(?<![A-Za-z0-9+]\d)(?<!\d\.\d)\d\d[.-])\d{3}[.-]\d{4}" + _NUMBER_END,
        *_DIGITS,
        check=_phone,
        normalize=_digits_only,
        shapes=("000-000-0000", "000.000.0000"),
        shape_pattern=r"000\)(?<=\(000\))",  # `(000)`, written to start as the other digit shapes do
    ),
    _d(  # national numbers with a trunk 0 and spaces: 020 7946 0958, 0161 496 0000, 030 1234 5678
        "phone",
        r"0(?<![A-Za-z0-9+]0)(?<!\d\.0)\d{2,4} \d{3,4} \d{3,4}(?! \d)" + _NUMBER_END,
        "0",
        check=_phone,
        normalize=_digits_only,
        shapes=("000 0000 0000", "0000 000 0000", "000 000 0000", "0000 0000 0000", "00000 000 000"),
    ),
    _d(  # after the phones: `(536) 22...` is none, and a phone's digits are never 3-2-4
        "ssn",
        r"\d" + _NUMBER_START.format(d=r"\d") + r"\d\d(?:-\d\d-| \d\d |\d\d)\d{4}" + _NUMBER_END,
        *_DIGITS,
        check=_ssn,
        normalize=_digits_only,
        shapes=("000-00-0000", "000 00 0000"),
        shape_pattern=r"000000000(?<![A-Za-z0]000000000)(?![A-Za-z0])",  # not in a hex digest
        retry=True,
    ),
)
"""Every built-in detector, most specific first."""
