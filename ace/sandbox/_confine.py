"""Parent-side confinement of the sandbox child, run between fork and exec (`preexec_fn`), Linux only.

A new network namespace (as root directly; otherwise together with a new user namespace, where the kernel
allows unprivileged ones), `PR_SET_NO_NEW_PRIVS`, then a Landlock domain (Linux >= 5.13, `_landlock`): files
are written only in the working directory, read only there and in the interpreter's and system libraries, and
only the interpreter may be executed; TCP and signals to processes outside the sandbox are refused where the
kernel's Landlock knows them. It runs here rather than in the child so that the child never loads `ctypes`: a
C extension, once loaded, can be loaded again without an audit event. What was applied is written as the
first JSON line of the report pipe; nothing here may raise (the child would not start).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from ace.sandbox import _landlock

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


def confine(report_fd: int, home: str, python: str | None = None, token: str = "") -> Callable[[], None] | None:
    """The `preexec_fn` for a child working in `home` and running `python`, or `None` off Linux.

    `token` starts the report line (the parent believes only lines that carry it).
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = _libc()
    root = os.geteuid() == 0
    flags = CLONE_NEWNET if root else CLONE_NEWUSER | CLONE_NEWNET
    ruleset = _landlock.Ruleset.plan(libc, home, python or sys.executable)

    def preexec() -> None:
        notes: list[str] = []
        network = no_new_privs = False
        landlock = 0
        try:
            if libc is None:
                notes.append("no C library through ctypes: no namespaces, no no-new-privileges, no Landlock")
            else:
                network = libc.unshare(flags) == 0
                if not network:
                    what = "network namespace" if root else "user and network namespace"
                    notes.append(f"no new {what}: unshare failed ({os.strerror(ctypes.get_errno())})")
                no_new_privs = libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                if not no_new_privs:
                    notes.append(f"no no-new-privileges: prctl failed ({os.strerror(ctypes.get_errno())})")
                landlock = ruleset.apply(notes)
            line = {
                "network_namespace": network,
                "user_namespace": network and not root,
                "no_new_privs": no_new_privs,
                "landlock_abi": landlock,
                "notes": notes,
            }
            os.write(report_fd, (token + "\t" + json.dumps(line) + "\n").encode())
        except BaseException:  # the child must start; the missing line says what is unknown
            pass

    return preexec
