"""Parent-side confinement of the sandbox child, run between fork and exec (`preexec_fn`), Linux only.

A new network namespace (as root directly; otherwise together with a new user namespace, where the kernel
allows unprivileged ones), `PR_SET_NO_NEW_PRIVS`, then a Landlock domain (Linux >= 5.13, `_landlock`): files
are written only in the working directory, read only there and in the interpreter's and system libraries, and
only the interpreter may be executed; TCP and signals to processes outside the sandbox are refused where the
kernel's Landlock knows them. It runs here rather than in the child so that the child never loads `ctypes`: a
C extension, once loaded, can be loaded again without an audit event. What was applied is written as the
first JSON line of the report pipe; nothing here may raise (the child would not start).

With a `Quota`, the namespaces include a mount namespace of the child's own, in which the working directory
becomes a tmpfs of `size` bytes and `inodes` files (the inputs are copied in): the kernel then bounds the disk
the code can fill, `posix_fallocate`, sparse files and many small files included, and the whole directory
disappears with the child's last process (the host's copy keeps the inputs only).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ace.sandbox._landlock import Ruleset

__all__ = ["Quota", "confine"]

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
NO_QUOTA = "no disk quota (tmpfs; the hook still bounds the number of files, RLIMIT_FSIZE each file's size)"


@dataclass(frozen=True)
class Quota:
    """The working directory's tmpfs: its size in bytes, its inodes (files and folders), and the uid owning it."""

    size: int
    inodes: int
    owner: int


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    """The C library, loaded once in the parent (never after fork: loading takes locks)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def confine(
    report_fd: int, home: str, python: str | None = None, token: str = "", quota: Quota | None = None
) -> Callable[[], None] | None:
    """The `preexec_fn` for a child working in `home` and running `python`, or `None` off Linux.

    `token` starts the report line (the parent believes only lines that carry it); `quota`: mount the working
    directory as a tmpfs of that size (the line then says `disk_quota`).
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = _libc()
    root = os.geteuid() == 0
    ids = os.getuid(), os.getgid()
    flags = (CLONE_NEWNET if root else CLONE_NEWUSER | CLONE_NEWNET) | (CLONE_NEWNS if quota else 0)
    ruleset = Ruleset.plan(libc, home, python or sys.executable)

    def preexec() -> None:
        notes: list[str] = []
        network = no_new_privs = disk = False
        landlock = 0
        try:
            if libc is None:
                notes.append("no C library through ctypes: no namespaces, no no-new-privileges, no Landlock")
                if quota is not None:
                    notes.append(f"{NO_QUOTA}: no C library")
            else:
                network = libc.unshare(flags) == 0
                if not network:
                    what = "network namespace" if root else "user and network namespace"
                    notes.append(f"no new {what}: unshare failed ({os.strerror(ctypes.get_errno())})")
                if quota is not None and network:
                    disk = _mount_quota(libc, home, quota, None if root else ids, notes)
                elif quota is not None:
                    notes.append(f"{NO_QUOTA}: no mount namespace")
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
            if quota is not None:
                line["disk_quota"] = disk
            os.write(report_fd, (token + "\t" + json.dumps(line) + "\n").encode())
        except BaseException:  # the child must start; the missing line says what is unknown
            pass

    return preexec


def _mount_quota(libc: Any, home: str, quota: Quota, ids: tuple[int, int] | None, notes: list[str]) -> bool:
    """Mount a tmpfs of `quota` over `home` in this (new) mount namespace, copy the inputs in, and enter it.

    `ids`: outside root, the uid and gid to map to `quota.owner` in the new user namespace (a tmpfs there takes
    only files of mapped ids). Nothing propagates to the host: the mounts are made private first.
    """

    def failed(what: str) -> bool:
        notes.append(f"{NO_QUOTA}: {what} failed ({os.strerror(ctypes.get_errno())})")
        return False

    try:
        if ids is not None:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{quota.owner} {ids[0]} 1")):
                _write(f"/proc/self/{name}", text)
            _write("/proc/self/gid_map", f"{quota.owner} {ids[1]} 1")
        if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            return failed("making the mounts private")
        inputs = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            options = f"size={quota.size},nr_inodes={quota.inodes},mode=0700,uid={quota.owner},gid={quota.owner}"
            flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
            if libc.mount(b"ace-sandbox", os.fsencode(home), b"tmpfs", flags, options.encode()) != 0:
                return failed("mount")
            os.chdir(home)  # the working directory was the host's folder underneath
            for name in os.listdir(inputs):
                _copy(inputs, name, quota.owner)
        finally:
            os.close(inputs)
    except OSError as e:
        notes.append(f"{NO_QUOTA}: {e}")
        return False
    return True


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _copy(folder: int, name: str, owner: int) -> None:
    """Copy the input `name` from the host's folder (a descriptor) to the current directory, owned by `owner`."""
    source = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=folder)
    target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        while chunk := os.read(source, 1 << 20):
            os.write(target, chunk)
        os.fchown(target, owner, owner)
    finally:
        os.close(source)
        os.close(target)
