"""Landlock (Linux >= 5.13) for the sandbox child through raw system calls: the kernel's own file-system fence.

Planned in the parent (paths resolved, ABI asked once) and applied between fork and exec by `_confine`,
after no-new-privileges; the domain survives `execve` and the uid switch and cannot be lifted. Granted:
read, write, create regular files and directories, remove, rename and truncate in the working directory; read
in the interpreter's prefixes, the bootstrap's folder and the system library folders; execute only the
interpreter and its ELF loader. Everything else the ABI knows is denied: writes, FIFOs, devices, sockets and
symbolic links anywhere else, `execve` of any other program, TCP bind/connect (ABI 4), signals to and abstract
Unix sockets of processes outside the sandbox (ABI 6). With an older ABI the newer rights stay unrestricted,
and the notes say so. Shared libraries are mapped, not executed: Landlock does not stop `dlopen` (the audit
hook does).
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Ruleset"]

_SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
"""The same numbers on every architecture but alpha and mips (whose tables are offset)."""
_ARCHES = ("x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x", "armv7l", "i686")
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file (not a directory) may carry."""
HOME_RIGHTS = READ_FILE | READ_DIR | WRITE_FILE | REMOVE_FILE | REMOVE_DIR | MAKE_DIR | MAKE_REG | REFER | TRUNCATE
READ_RIGHTS = READ_FILE | READ_DIR
SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/etc/ld.so.cache", "/etc/localtime")
"""Shared libraries, the dynamic loader's cache, time zones: what the interpreter reads before the hook runs."""


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("handled_fs", ctypes.c_uint64), ("handled_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


@dataclass(frozen=True)
class Ruleset:
    """What to apply in the child: the kernel's ABI (0: none, `reason` says why) and `(path, rights)` rules."""

    libc: Any
    abi: int
    reason: str
    rules: tuple[tuple[str, int], ...]

    @classmethod
    def plan(cls, libc: Any, home: str, python: str) -> Ruleset:
        """Resolve the paths in the parent, where it is cheap and may fail loudly (the child must not)."""
        abi, reason = _abi(libc)
        if not abi:
            return cls(libc, 0, reason, ())
        fs = _FS_BY_ABI.get(abi, _FS_BY_ABI[5])
        interpreter = os.path.realpath(python)
        read = {*SYSTEM_READ, str(Path(__file__).resolve().parent), os.path.dirname(os.path.dirname(python))}
        read |= {sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.dirname(interpreter))}
        rules = [(os.path.realpath(home), HOME_RIGHTS & fs)]
        rules += [(path, READ_RIGHTS) for path in sorted({os.path.realpath(p) for p in read}) if os.path.exists(path)]
        loader = _elf_loader(interpreter)
        if loader is None:  # not an ELF binary we can read: let the system library folders execute
            rules += [(path, READ_RIGHTS | EXECUTE) for path in ("/lib", "/lib64", "/usr/lib") if os.path.isdir(path)]
        else:
            rules.append((os.path.realpath(loader), READ_FILE | EXECUTE))
        rules.append((interpreter, READ_FILE | EXECUTE))
        return cls(libc, abi, "", tuple(rules))

    def apply(self, notes: list[str]) -> int:
        """Restrict this process (between fork and exec, after no-new-privileges); the ABI applied, or 0."""
        if not self.abi:
            notes.append(self.reason)
            return 0
        syscall = self.libc.syscall
        fs = _FS_BY_ABI.get(self.abi, _FS_BY_ABI[5])
        net = NET_BIND_TCP | NET_CONNECT_TCP if self.abi >= 4 else 0
        scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if self.abi >= 6 else 0
        attr = _RulesetAttr(fs, net, scoped)
        size = 24 if self.abi >= 6 else 16 if self.abi >= 4 else 8
        fd = syscall(_SYSCALLS["create_ruleset"], ctypes.byref(attr), size, 0)
        if fd < 0:
            notes.append(f"no Landlock: landlock_create_ruleset failed ({os.strerror(ctypes.get_errno())})")
            return 0
        try:
            for path, rights in self.rules:
                try:
                    parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    if not os.path.isdir(path):
                        rights &= FILE_RIGHTS
                    rule = _PathBeneath(rights & fs, parent)
                    if syscall(_SYSCALLS["add_rule"], fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                        notes.append(f"Landlock rule for {path} refused ({os.strerror(ctypes.get_errno())})")
                finally:
                    os.close(parent)
            if syscall(_SYSCALLS["restrict_self"], fd, 0) != 0:
                notes.append(f"no Landlock: landlock_restrict_self failed ({os.strerror(ctypes.get_errno())})")
                return 0
        finally:
            os.close(fd)
        if self.abi < 6:
            notes.append(f"Landlock ABI {self.abi} (< 6): signals to processes outside the sandbox not fenced")
        return self.abi


@functools.lru_cache(maxsize=1)
def _abi(libc: Any) -> tuple[int, str]:
    """The kernel's Landlock ABI version, or 0 and why there is none (asked once per process)."""
    if libc is None:
        return 0, "no Landlock: no C library through ctypes"
    if platform.machine() not in _ARCHES:
        return 0, f"no Landlock: system call numbers unknown on {platform.machine()}"
    libc.syscall.restype = ctypes.c_long
    abi = int(libc.syscall(_SYSCALLS["create_ruleset"], None, 0, _CREATE_RULESET_VERSION))
    if abi < 1:
        why = os.strerror(ctypes.get_errno())
        return 0, f"no Landlock (Linux >= 5.13 with Landlock enabled): {why}; files are fenced by the hook alone"
    return abi, ""


def _elf_loader(path: str) -> str | None:
    """The program interpreter (`PT_INTERP`, e.g. `/lib64/ld-linux-x86-64.so.2`) of a 64-bit ELF binary."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return None
            order = "<" if head[5] == 1 else ">"
            (table,) = struct.unpack_from(order + "Q", head, 0x20)
            size, count = struct.unpack_from(order + "HH", head, 0x36)
            f.seek(table)
            headers = f.read(size * count)
            for i in range(count):
                if struct.unpack_from(order + "I", headers, i * size)[0] == 3:  # PT_INTERP
                    offset, length = (
                        struct.unpack_from(order + "Q", headers, i * size + 8)[0],
                        struct.unpack_from(order + "Q", headers, i * size + 32)[0],
                    )
                    f.seek(offset)
                    return f.read(length).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None
