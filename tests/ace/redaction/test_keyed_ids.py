"""Issue 37: the digits of a redacted id are keyed (HMAC) with a per-installation key kept outside run folders."""

from __future__ import annotations

import hashlib
import hmac
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ace.redaction import Redactor, id_placeholder
from ace.redaction._ids import KEY_ENV, redaction_key_path

SSN = "536-22-8145"


def _unkeyed(kind: str, value: str) -> str:
    digest = hashlib.sha256(f"{kind}\x00{value}".encode()).hexdigest()
    return f"[REDACTED:{kind}#{int(digest[:12], 16) % 10**8:08d}]"


def test_the_placeholder_is_an_hmac_under_the_key_not_a_plain_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "k1")
    keyed = id_placeholder("ssn", "536228145")
    digest = hmac.new(b"k1", b"ssn\x00536228145", hashlib.sha256).hexdigest()
    assert keyed == f"[REDACTED:ssn#{int(digest[:12], 16) % 10**8:08d}]"
    assert keyed != _unkeyed("ssn", "536228145")  # what a brute force over every SSN would recompute
    assert id_placeholder("ssn", "536228145") == keyed  # same value, same placeholder
    monkeypatch.setenv(KEY_ENV, "k2")
    assert id_placeholder("ssn", "536228145") != keyed


def test_an_id_holding_a_secret_is_redacted_with_the_keyed_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "k1")
    clean, _ = Redactor().redact_data({"trace_id": f"user-{SSN}"}, skip_keys=frozenset({"trace_id"}))
    assert clean == {"trace_id": f"user-{id_placeholder('ssn', '536228145')}"}
    assert _unkeyed("ssn", "536228145") not in str(clean)


def test_without_the_variable_a_key_file_is_made_once_mode_0600_outside_the_run(tmp_path: Path) -> None:
    script = (
        "from ace.redaction import id_placeholder; from ace.redaction._ids import redaction_key_path;"
        "print(id_placeholder('email', 'a@x.org')); print(redaction_key_path())"
    )
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    placeholder, path = first.stdout.split()
    assert second.stdout.split() == [placeholder, path]  # the same in every process of the installation
    key = Path(path)
    assert key == tmp_path / "state" / "ace" / "redaction.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert placeholder != _unkeyed("email", "a@x.org")
    assert placeholder == f"[REDACTED:email#{_hmac_digits(key.read_bytes(), 'email', 'a@x.org')}]"


def test_the_default_key_path_is_the_users_state_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert redaction_key_path() == tmp_path / ".local" / "state" / "ace" / "redaction.key"


def _hmac_digits(key: bytes, kind: str, value: str) -> str:
    digest = hmac.new(key, f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()
    return f"{int(digest[:12], 16) % 10**8:08d}"
