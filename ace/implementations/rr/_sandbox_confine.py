"""Parent-side confinement of the sandbox child, run between fork and exec (`preexec_fn`), Linux only.

A new network namespace (as root directly; otherwise together with a new user namespace, where the kernel
allows unprivileged ones) and `PR_SET_NO_NEW_PRIVS`. It runs here rather than in the child so that the child
never loads `ctypes`: a C extension, once loaded, can be loaded again without an audit event. What was applied
is written as the first JSON line of the report pipe; nothing here may raise (the child would not start).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["confine"]

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    """The C library, loaded once in the parent (never after fork: loading takes locks)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def confine(report_fd: int) -> Callable[[], None] | None:
    """The `preexec_fn` for the child, or `None` off Linux (the child then reports the audit hook alone)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = _libc()
    root = os.geteuid() == 0
    flags = CLONE_NEWNET if root else CLONE_NEWUSER | CLONE_NEWNET

    def preexec() -> None:
        notes: list[str] = []
        network = no_new_privs = False
        try:
            if libc is None:
                notes.append("no C library through ctypes: no namespaces, no no-new-privileges")
            else:
                network = libc.unshare(flags) == 0
                if not network:
                    what = "network namespace" if root else "user and network namespace"
                    notes.append(f"no new {what}: unshare failed ({os.strerror(ctypes.get_errno())})")
                no_new_privs = libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                if not no_new_privs:
                    notes.append(f"no no-new-privileges: prctl failed ({os.strerror(ctypes.get_errno())})")
            line = {
                "network_namespace": network,
                "user_namespace": network and not root,
                "no_new_privs": no_new_privs,
                "notes": notes,
            }
            os.write(report_fd, (json.dumps(line) + "\n").encode())
        except BaseException:  # the child must start; the missing line says what is unknown
            pass

    return preexec
