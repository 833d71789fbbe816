"""`id_placeholder`: the placeholder of a secret inside an id, keyed with this installation's redaction key.

`[REDACTED:email#83920145]` is 8 decimal digits of an HMAC-SHA-256 of the value, so an id that held a secret is still
one id in every run, trace and sink of one installation. The key makes the digits useless to someone who guesses
values (an unkeyed digest of a social security number is brute-forced in seconds): it is 32 random bytes created on
first use at `$XDG_STATE_HOME/ace/redaction.key` (default `~/.local/state/ace/redaction.key`, mode 0600), outside
every run folder, or the environment variable `ACE_REDACTION_KEY` (any text; tests and CI set it). Another key gives
other digits: runs compared across installations do not share redacted ids.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from ace.exceptions import UserError

__all__ = ["KEY_ENV", "id_placeholder", "redaction_key", "redaction_key_path"]

KEY_ENV = "ACE_REDACTION_KEY"
"""The environment variable that, when set, is the key (its UTF-8 bytes) instead of the key file."""


def redaction_key_path() -> Path:
    """Where this installation's key lives: `$XDG_STATE_HOME/ace/redaction.key` (`~/.local/state/...` by default)."""
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    base = Path(state) if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base / "ace" / "redaction.key"


def redaction_key() -> bytes:
    """This installation's key: `ACE_REDACTION_KEY`, else the key file (created, 0600, on first use)."""
    value = os.environ.get(KEY_ENV)
    if value:
        return value.encode("utf-8")
    return _file_key(str(redaction_key_path()))


@functools.lru_cache(maxsize=4)
def _file_key(path: str) -> bytes:
    """The key at `path`, created with 32 random bytes when there is none (read once per process)."""
    file = Path(path)
    if not file.exists():
        try:
            file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            temp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
            try:
                os.link(temp, file)  # whole, and never over a key another process made first
            except FileExistsError:
                pass
            finally:
                temp.unlink()
        except OSError as e:
            raise UserError(
                f"cannot create the redaction key {file} ({e.strerror}): make its folder writable, or set "
                f"{KEY_ENV} to a secret of your own"
            ) from None
    try:
        key = file.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read the redaction key {file} ({e.strerror}): fix it, or set {KEY_ENV}") from None
    if len(key) < 16:
        raise UserError(
            f"the redaction key {file} has {len(key)} bytes: delete it (a new one is made) or set {KEY_ENV}"
        )
    return key


def id_placeholder(kind: str, value: str) -> str:
    """`[REDACTED:email#83920145]`: the placeholder of a secret inside an id or a key, the same in every run, trace
    and sink of this installation (8 decimal digits of an HMAC of the value under `redaction_key()`)."""
    digest = hmac.new(redaction_key(), f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()
    return f"[REDACTED:{kind}#{int(digest[:12], 16) % 10**8:08d}]"
