"""The sandbox child's own isolation, applied by `_bootstrap.py` before the model's code runs.

Started as root, the child drops to an unprivileged uid/gid with no supplementary groups; then it sets
`RLIMIT_NPROC` to 0 (no new process or thread for a non-root uid). The namespaces and no-new-privileges are
applied before exec by the parent (`_confine`), so the child never loads `ctypes`. When the standard
library is not readable by the unprivileged uid (an interpreter under `/root`), it stays reachable, read-only,
through a directory descriptor opened before the drop (`/proc/self/fd/N`). Each step the platform refuses is
skipped and named in the report, which the parent logs as a warning.
"""

from __future__ import annotations

import os
import resource
import sys
from typing import Any

__all__ = ["Isolation", "isolate"]


class Isolation:
    """What the child applied; `notes` say what it could not, and why (a plain class: no `dataclasses` import)."""

    def __init__(self, *, started_as_root: bool) -> None:
        self.platform = sys.platform
        self.started_as_root = started_as_root
        self.uid = -1
        self.nproc_limited = False
        self.stdlib_via_descriptor = False
        self.notes: list[str] = []

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def isolate(unprivileged_uid: int, library: list[str]) -> tuple[Isolation, list[str]]:
    """Apply what the platform allows; return the report and `library` (the import path) as still readable."""
    report = Isolation(started_as_root=os.geteuid() == 0)
    if report.started_as_root and hasattr(os, "setgroups"):
        library = _drop_privileges(unprivileged_uid, library, report)
    _limit_processes(report)
    report.uid = os.getuid()
    return report, library


def _drop_privileges(uid: int, library: list[str], report: Isolation) -> list[str]:
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
    readable: list[str] = []
    for path in library:
        if path not in held or os.access(path, os.R_OK | os.X_OK):
            readable.append(path)
            if path in held:
                os.close(held.pop(path))
            continue
        alias = f"/proc/self/fd/{held.pop(path)}"  # the process may always follow its own descriptors
        if os.access(alias, os.R_OK | os.X_OK):
            readable.append(alias)
            report.stdlib_via_descriptor = True
            _repoint_packages(path, alias)
        else:
            report.notes.append(f"{path} is not readable by uid {uid}: only modules imported before the drop work")
    return readable


def _repoint_packages(path: str, alias: str) -> None:
    """Packages imported before the drop (`encodings`, `importlib`, ...) find their submodules through `alias`."""
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [alias + entry[len(path) :] if entry.startswith(path + "/") else entry for entry in search]


def _limit_processes(report: Isolation) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    except (ValueError, OSError) as e:
        report.notes.append(f"RLIMIT_NPROC not set ({e})")
        return
    report.nproc_limited = os.getuid() != 0  # root ignores it
    if not report.nproc_limited:
        report.notes.append("RLIMIT_NPROC does not bind root: new processes are refused by the audit hook only")
