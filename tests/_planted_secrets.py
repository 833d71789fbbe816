"""Secrets of every built-in kind, in the forms they are written in, for the redaction tests to plant."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st


@dataclass(frozen=True)
class Plant:
    """`text` is what is planted; `secret` is the part of it that must not survive redaction."""

    kind: str
    text: str
    secret: str


AWS_SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCY9q2LmZ8ksTab"
AWS_SECRET_SLASHED = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY9q2LmZ8ksT"
AWS_KEYWORD_FORMS = (
    "AWS_SECRET_ACCESS_KEY={v}",
    "export AWS_SECRET_ACCESS_KEY={v}",
    '"aws_secret_access_key": "{v}"',
    '\\"aws_secret_access_key\\": \\"{v}\\"',
    "aws_secret_access_key: {v}",
    "--aws-secret-access-key {v}",
    "--aws-secret-access-key={v}",
    "SecretAccessKey={v}",
    "aws.secretKey = {v}",
    "spring.cloud.aws.credentials.secret-key={v}",
    "$env:AWS_SECRET_ACCESS_KEY='{v}'",
)
PASSWORD = "hunter22x"
PASSWORD_FORMS = (
    "password={v}",
    "DB_PASSWORD={v}",
    "export POSTGRES_PASSWORD={v}",
    "PGPASSWORD={v}",
    '"password": "{v}"',
    '\\"password\\": \\"{v}\\"',
    "'password' => '{v}'",
    "passwd: {v}",
    "--password {v}",
    "--db-password={v}",
)
PRIVATE_KEY_BODY = "MIIEowIBAAKCAQEAvQ7pXk2Jb9Yw"
GENERIC_SECRET = "8fJ2kLm9Qz4xW7vB1nR5tY3uP6sD0gH2jK8lZ4cXq7Wd"
"""44 random characters (not 40: no AWS secret's shape either), so only the key name says it is a secret."""
GENERIC_FORMS = (
    "WEBHOOK_SIGNING_SECRET={v}",
    "OPENAI_API_KEY={v}",  # no sk- prefix
    "secret: {v}",
    "client_secret: '{v}'",
    '"api_key": "{v}"',
    '\\"apiKey\\": \\"{v}\\"',
    "export GITHUB_TOKEN={v}",
    "auth_token='{v}'",
    "X-Auth-Token: {v}",
    "credential = {v}",
    "'access_key' => '{v}'",
    "PRIVATE_KEY := {v}",
)
"""A secret-named key before a random value, in the `=`, `:`, JSON, escaped JSON and YAML forms."""


def _same(kind: str, *values: str) -> list[Plant]:
    return [Plant(kind, v, v) for v in values]


PLANTS: list[Plant] = [
    Plant(
        "private_key",
        f"-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\n-----END RSA PRIVATE KEY-----",
        PRIVATE_KEY_BODY,
    ),
    *_same("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    *_same("anthropic_key", "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa1-QQ"),
    *_same("openai_key", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i", "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
    *_same("aws_access_key", "AKIAQ3EGTN7PLMW4ZX2B"),
    *[Plant("aws_secret_key", form.format(v=AWS_SECRET), AWS_SECRET) for form in AWS_KEYWORD_FORMS],
    *_same("aws_secret_key", AWS_SECRET_SLASHED),
    *_same("google_api_key", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    *_same(
        "github_token", "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXY", "github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP"
    ),
    *_same("gitlab_token", "glpat-Ab3dEf6hIj9kLm2nOp5q"),
    *_same("slack_token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl"),
    *_same("slack_webhook", "https://hooks.slack.com/services/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"),
    *_same("stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    *_same("huggingface_token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    *_same("npm_token", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    *_same("pypi_token", "pypi-AgEIcHlwaS5vcmcCJGE0ZDk2YjE3LTk0OGItNDg1Ni1hYjE3LWI2M2QxMDc4YzA5OQ"),
    *_same("sendgrid_key", "SG.AbCdEfGhIjKlMnOpQr.StUvWxYz0123456789AbCd"),
    Plant("bearer_token", "Bearer abcdef0123456789abcdef0123456789", "abcdef0123456789abcdef0123456789"),
    Plant("basic_auth", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    Plant("url_credentials", "postgres://admin:s3cretPw@db.example.com:5432/app", "admin:s3cretPw"),
    *_same("email", "user-x.y@mail.io", "Jane.Doe+ace@mail.example.org", "mia_li_3668@example.com"),
    *[Plant("password", form.format(v=PASSWORD), PASSWORD) for form in PASSWORD_FORMS],
    *[Plant("generic_secret", form.format(v=GENERIC_SECRET), GENERIC_SECRET) for form in GENERIC_FORMS],
    *_same("base64_key", "c2stcHJvai1BYjNkRWY2aElqOWtMbTJuT3A1cVJzOHRVdjF3WHk0eg=="),
    *_same("iban", "DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432"),
    *_same("card_number", "4111 1111 1111 1111", "4111-1111-1111-1111", "5500000000000004", "4111.1111.1111.1111"),
    *_same("phone", "+1 415 555 0132", "(415) 555-0132", "415-555-0132", "020 7946 0958"),
    *_same("ssn", "536-22-8145", "536228145", "536 22 8145"),
]
"""Every built-in kind, at least once; keyword kinds in each keyword form."""

DIGIT_KINDS = frozenset({"card_number", "phone", "ssn", "iban"})
"""Kinds whose values end in digits: a digit beyond `.`, `-` or a space continues the number, so is no boundary."""

BOUNDARIES = ("-", "_", ".", "/", "=", ":", '"', "'", " ", "\n")
"""What may stand right before or after a planted value."""


@dataclass(frozen=True)
class Planting:
    """A plant in random text: `before`, a boundary, the plant's text, a boundary, `after`."""

    plant: Plant
    before: str
    left: str
    right: str
    after: str

    @property
    def text(self) -> str:
        return f"{self.before}{self.left}{self.plant.text}{self.right}{self.after}"


def plantings(surroundings: st.SearchStrategy[str]) -> st.SearchStrategy[Planting]:
    """Every plant at every pair of boundaries, between random texts drawn from `surroundings`."""
    boundary = st.sampled_from(BOUNDARIES)
    return st.builds(
        Planting, plant=st.sampled_from(PLANTS), before=surroundings, left=boundary, right=boundary, after=surroundings
    )
