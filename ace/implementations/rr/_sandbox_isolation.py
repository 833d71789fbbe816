"""The sandbox child's OS-level isolation, applied by `_bootstrap.py` before the model's code runs (Linux only).

In order: a new network namespace (as root directly; otherwise together with a new user namespace, where the
kernel allows unprivileged ones), no supplementary groups and an unprivileged uid/gid when started as root,
`PR_SET_NO_NEW_PRIVS`, and `RLIMIT_NPROC` 0 (no new process or thread for a non-root uid). Each step that the
platform refuses is skipped and named in the report, which the parent logs as a warning; the audit hook is
installed either way. When the standard library is not readable by the unprivileged uid (an interpreter under
`/root`), it is kept reachable, read-only, through a directory descriptor opened before the drop
(`/proc/self/fd/N`).
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Isolation", "isolate"]

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38


@dataclass(kw_only=True)
class Isolation:
    """What was applied; `notes` say what was not, and why."""

    platform: str = sys.platform
    started_as_root: bool = False
    uid: int = -1
    network_namespace: bool = False
    user_namespace: bool = False
    no_new_privs: bool = False
    nproc_limited: bool = False
    stdlib_via_descriptor: bool = False
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def isolate(unprivileged_uid: int, library: list[str]) -> tuple[Isolation, list[str]]:
    """Apply what the platform allows; return the report and `library` (the import path) as still readable."""
    report = Isolation(started_as_root=os.geteuid() == 0)
    if not sys.platform.startswith("linux"):
        report.notes.append(f"no OS-level isolation on {sys.platform}: only the audit hook and resource limits")
        report.uid = os.getuid()
        _limit_processes(report)
        return report, library
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError) as e:  # a Python built without ctypes
        report.notes.append(f"ctypes unavailable ({e}): no namespaces, no no-new-privileges")
        libc = None
    if report.started_as_root:
        report.network_namespace = _unshare(libc, CLONE_NEWNET, report, "network namespace")
        library = _drop_privileges(libc, unprivileged_uid, library, report)
    else:
        both = _unshare(libc, CLONE_NEWUSER | CLONE_NEWNET, report, "user and network namespace")
        report.user_namespace = report.network_namespace = both
    report.no_new_privs = _prctl(libc, PR_SET_NO_NEW_PRIVS, 1, report, "no-new-privileges")
    _limit_processes(report)
    report.uid = os.getuid()
    for name in ("ctypes", "ctypes._endian", "_ctypes"):
        sys.modules.pop(name, None)  # a later `import ctypes` goes through the audit hook again
    return report, library


def _unshare(libc: Any, flags: int, report: Isolation, what: str) -> bool:
    if libc is None:
        return False
    if libc.unshare(flags) == 0:
        return True
    report.notes.append(f"no new {what}: unshare failed ({os.strerror(_errno())})")
    return False


def _prctl(libc: Any, option: int, value: int, report: Isolation, what: str) -> bool:
    if libc is None:
        return False
    if libc.prctl(option, value, 0, 0, 0) == 0:
        return True
    report.notes.append(f"no {what}: prctl failed ({os.strerror(_errno())})")
    return False


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


def _drop_privileges(libc: Any, uid: int, library: list[str], report: Isolation) -> list[str]:
    """Become `uid` (no groups); keep the standard library readable through descriptors where it would not be."""
    held = {path: os.open(path, os.O_RDONLY | os.O_DIRECTORY) for path in library if os.path.isdir(path)}
    try:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    except OSError as e:
        report.notes.append(f"still root: could not switch to uid {uid} ({e.strerror})")
        for fd in held.values():
            os.close(fd)
        return library
    _prctl(libc, PR_SET_DUMPABLE, 1, report, "access to /proc/self/fd")  # a uid change clears it
    readable: list[str] = []
    for path in library:
        if path not in held or os.access(path, os.R_OK | os.X_OK):
            readable.append(path)
            if path in held:
                os.close(held.pop(path))
            continue
        fd = held.pop(path)
        alias = f"/proc/self/fd/{fd}"
        if os.access(alias, os.R_OK | os.X_OK):
            readable.append(alias)
            report.stdlib_via_descriptor = True
        else:
            report.notes.append(f"{path} is not readable by uid {uid}: only modules imported before the drop work")
    return readable


def _limit_processes(report: Isolation) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    except (ValueError, OSError) as e:
        report.notes.append(f"RLIMIT_NPROC not set ({e})")
        return
    report.nproc_limited = os.getuid() != 0  # root ignores it
    if not report.nproc_limited:
        report.notes.append("RLIMIT_NPROC does not bind root: new processes are refused by the audit hook only")
