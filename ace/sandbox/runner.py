"""`run_code`: the recursive reflector's `execute_code`, run in a separate, limited Python process.

The model's code runs in a fresh interpreter (`python -I -S`: the standard library only, no site-packages, no
`PYTHON*` variables) in its own session and its own temporary working directory, which holds the trace as
`trace.json` (also bound to the variable `trace`) and is removed afterwards. Limits:

- wall clock: the whole process group is killed at `timeout_s`;
- memory: `RLIMIT_AS` (a `MemoryError` in the code, reported as such);
- output: stdout and stderr are each cut at `max_output_bytes`, with a marker saying how much was dropped;
- files: `RLIMIT_FSIZE`, and only the working directory can be opened (the standard library read-only); on
  Linux the working directory is a tmpfs of `max_disk_mb` and `max_files` in the child's own mount namespace,
  elsewhere the hook counts the files the code makes;
- environment: built from scratch (a minimal `PATH`, `HOME`/`TMPDIR` in the working directory, UTF-8 locale),
  so no API key or token of the parent is visible; there is no stdin;
- an audit hook (`_policy`) refuses network, process creation, signals, native code, links, heap and
  frame introspection, code-object forgery and raising the limits; its policy is immutable and out of the
  code's reach. Refusals come back in `SandboxResult.refused`, also when the code catches the exception;
- on Linux: a new network namespace (with a user namespace when not root), no-new-privileges and a Landlock
  file-system fence (writes only in the working directory, no other program executed; `_landlock`) before exec
  (`_confine`), then in the child an unprivileged uid when started as root and `RLIMIT_NPROC`
  (`_isolation`); what the platform refuses is logged once as a warning and kept in
  `SandboxResult.isolation`.

README "Sandbox threat model" says what this holds against and what it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import os
import secrets
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.sandbox._confine import Quota, confine
from ace.sandbox._report import ReportReader

__all__ = ["SandboxIsolation", "SandboxLimits", "SandboxResult", "run_code", "sandbox_environment"]

UNPRIVILEGED_UID = 65534
"""The uid (and gid) the child drops to when ACE runs as root: `nobody` on most Linux systems."""
_log = logging.getLogger(__name__)

_BOOTSTRAP = Path(__file__).with_name("_bootstrap.py")
_EXIT_ERROR = 1  # `_bootstrap.EXIT_ERROR`
_EXIT_MEMORY = 3  # `_bootstrap.EXIT_MEMORY`
_TOKEN_FILE = "report.token"  # `_bootstrap.TOKEN_FILE`
_READ_CHUNK = 65_536
_DRAIN_GRACE_S = 1.0
_MAX_REFUSALS = 20
_PAGE = 4_096
_DISK_POLL_S = 0.05


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """What one `execute_code` run may use."""

    timeout_s: float = 5.0
    """Wall-clock seconds before the process group is killed."""
    memory_mb: int = 256
    """Address-space limit of the process, in MiB (the interpreter itself takes about 15)."""
    max_output_bytes: int = 8_000
    """Bytes of stdout, and separately of stderr, returned to the model; the rest is dropped with a marker."""
    max_file_mb: int = 16
    """Largest file the code may write in its working directory, in MiB."""
    max_disk_mb: int = 64
    """All the files the code makes in its working directory together, in MiB: on Linux a tmpfs (memory, not disk),
    elsewhere checked by the parent every 50 ms."""
    max_files: int = 1_000
    """Files the code may make in its working directory at a time; a folder counts as two, at most a tenth folders."""

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"SandboxLimits.timeout_s must be a positive number of seconds, got {self.timeout_s}")
        if self.memory_mb < 32:
            raise ValueError(f"SandboxLimits.memory_mb must be at least 32 (Python needs ~15), got {self.memory_mb}")
        if self.max_output_bytes < 100:
            raise ValueError(f"SandboxLimits.max_output_bytes must be at least 100, got {self.max_output_bytes}")
        if self.max_file_mb < 1:
            raise ValueError(f"SandboxLimits.max_file_mb must be at least 1 (MiB), got {self.max_file_mb}")
        if self.max_disk_mb < 1:
            raise ValueError(f"SandboxLimits.max_disk_mb must be at least 1 (MiB), got {self.max_disk_mb}")
        if self.max_files < 10:
            raise ValueError(
                f"SandboxLimits.max_files must be at least 10 (a tenth may be folders), got {self.max_files}"
            )


@dataclass(frozen=True, kw_only=True)
class SandboxIsolation:
    """The OS-level isolation the child applied before running the code (see `_isolation`)."""

    platform: str
    uid: int
    """The uid the code ran as (65534 also inside a user namespace)."""
    started_as_root: bool
    network_namespace: bool
    user_namespace: bool
    no_new_privs: bool
    nproc_limited: bool
    landlock_abi: int = 0
    """The Landlock ABI the child's file-system fence was built with (Linux >= 5.13); 0: none (see `notes`)."""
    disk_quota: bool = False
    """The working directory was a tmpfs of `max_disk_mb` and `max_files` (its own mount namespace)."""
    stdlib_via_descriptor: bool = False
    notes: tuple[str, ...] = ()
    """What could not be applied, and why."""

    @classmethod
    def from_report(cls, data: Mapping[str, Any]) -> SandboxIsolation:
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**{**fields, "notes": tuple(str(n) for n in data.get("notes", ()))})


@dataclass(frozen=True, kw_only=True)
class SandboxResult:
    """How one run ended and what it printed (already capped)."""

    stdout: str
    stderr: str
    exit_code: int | None
    """The process's exit status; negative is the signal that ended it; `None` if it could not be reaped."""
    timed_out: bool
    memory_exceeded: bool
    disk_exceeded: bool = False
    """The working directory outgrew `max_disk_mb` or `max_files` (where it is no tmpfs) and the code was killed."""
    stdout_dropped: int = 0
    """Bytes of stdout beyond the cap that were dropped."""
    stderr_dropped: int = 0
    duration_s: float
    limits: SandboxLimits
    refused: tuple[str, ...] = ()
    """What the sandbox refused (`event<TAB>reason`, the first 20), also when the code caught the exception."""
    refused_count: int = 0
    isolation: SandboxIsolation | None = None
    """`None` if the child died before it could report (e.g. a broken interpreter)."""

    @property
    def ok(self) -> bool:
        """The code ran to the end without an exception."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        """Some output was dropped."""
        return self.stdout_dropped > 0 or self.stderr_dropped > 0

    def as_text(self) -> str:
        """The result as the model reads it: status line, then stdout and stderr (each only when non-empty)."""
        if self.timed_out:
            status = (
                f"Stopped: the code ran longer than the {self.limits.timeout_s:g} s time limit and was killed. "
                "Compute less at once (smaller slices, no unbounded loops)."
            )
        elif self.disk_exceeded:
            status = (
                f"Stopped: the code wrote more than the {self.limits.max_disk_mb} MB or {self.limits.max_files} files "
                "its working directory may hold, and was killed. Write less, or fewer files."
            )
        elif self.memory_exceeded:
            status = (
                f"Stopped: the code needed more than the {self.limits.memory_mb} MB memory limit (MemoryError). "
                "Work on smaller slices of the trace."
            )
        elif self.exit_code is not None and self.exit_code < 0:
            status = f"Stopped: the process was killed by {_signal_name(-self.exit_code)}."
        elif self.exit_code == 0:
            status = f"OK ({self.duration_s:.2f} s)."
        elif self.exit_code == _EXIT_ERROR:
            status = "The code raised an exception; see stderr."
        else:
            status = f"The code exited with status {self.exit_code}."
        parts = [status]
        if self.refused:
            more = (
                f" (and {self.refused_count - len(self.refused)} more)"
                if self.refused_count > len(self.refused)
                else ""
            )
            reasons = "\n".join(f"- {line.partition(chr(9))[2] or line}" for line in self.refused)
            parts.append(f"Refused by the sandbox{more}:\n{reasons}")
        for name, text, dropped in (
            ("stdout", self.stdout, self.stdout_dropped),
            ("stderr", self.stderr, self.stderr_dropped),
        ):
            if text or dropped:
                marker = f"\n[... output truncated: {dropped:,} more bytes of {name} dropped ...]" if dropped else ""
                parts.append(f"--- {name} ---\n{text.rstrip()}{marker}")
        if len(parts) == 1 and self.ok:
            parts.append("(no output: print() what you want to see, or end with an expression)")
        return "\n".join(parts)


def sandbox_environment(home: str) -> dict[str, str]:
    """The child's whole environment: nothing is inherited from the parent."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


async def run_code(
    code: str,
    trace: Mapping[str, Any] | bytes,
    *,
    limits: SandboxLimits | None = None,
    python: str | None = None,
) -> SandboxResult:
    """Run `code` in a fresh sandboxed interpreter with `trace` loaded; user-code failures come back as results.

    Args:
        code: Python source from the model.
        trace: The trace mapping, or its JSON encoding (to encode a long trace once per session).
        limits: Time, memory, output and file limits.
        python: The interpreter to run (default: this one, `sys.executable`).

    Raises:
        OSError: the interpreter could not be started (a broken installation, not a bad snippet).
    """
    limits = limits or SandboxLimits()
    data = trace if isinstance(trace, bytes) else json.dumps(trace, ensure_ascii=False, default=str).encode()
    cpu_s = math.ceil(limits.timeout_s) + 1  # CPU and alarm limits: backstops, should this process die first
    args = [str(limits.memory_mb << 20), str(limits.max_file_mb << 20), str(cpu_s), str(cpu_s + 1)]
    args.append(str(limits.max_files))
    report_read, report_write = os.pipe()
    report = ReportReader(report_read, secrets.token_hex(16))
    with tempfile.TemporaryDirectory(prefix="ace-sandbox-", ignore_cleanup_errors=True) as home, report:
        token = report.token
        inputs = _write_inputs(Path(home), data, code, token)
        quota = Quota((limits.max_disk_mb << 20) + inputs, limits.max_files + 8, UNPRIVILEGED_UID)
        started = time.perf_counter()
        try:
            process = await asyncio.create_subprocess_exec(
                python or sys.executable,
                "-I",
                "-S",
                "-X",
                "utf8",
                str(_BOOTSTRAP),
                *args,
                str(UNPRIVILEGED_UID),
                str(report_write),
                cwd=home,
                env=sandbox_environment(home),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group, killed as a whole
                pass_fds=(report_write,),
                preexec_fn=confine(report_write, home, python, token, quota),
            )
        finally:
            os.close(report_write)
        report.start()  # read meanwhile: the child blocks on a full pipe rather than drop a refusal
        assert process.stdout is not None and process.stderr is not None
        out = asyncio.ensure_future(_read_capped(process.stdout, limits.max_output_bytes))
        err = asyncio.ensure_future(_read_capped(process.stderr, limits.max_output_bytes))
        budget = ((limits.max_disk_mb << 20) + inputs, limits.max_files + 3)
        disk = asyncio.ensure_future(_watch_disk(process, home, budget))
        try:
            timed_out = await _wait(process, limits.timeout_s)
        except BaseException:
            out.cancel()
            err.cancel()
            raise
        finally:
            disk.cancel()
            await _stop(process)
        duration = time.perf_counter() - started
        (stdout, stdout_dropped), (stderr, stderr_dropped) = await _finish(out, err)
        report.stop()
        isolation, refused = _read_report(report.lines, report.forged)
    exit_code = process.returncode
    disk_exceeded = disk.done() and not disk.cancelled() and disk.result()
    memory_exceeded = (
        not timed_out and not disk_exceeded and (exit_code == _EXIT_MEMORY or stderr.rstrip().endswith("MemoryError"))
    )
    return SandboxResult(
        stdout=stdout,
        stderr=stderr,
        exit_code=exit_code,
        timed_out=timed_out,
        memory_exceeded=memory_exceeded,
        disk_exceeded=disk_exceeded,
        stdout_dropped=stdout_dropped,
        stderr_dropped=stderr_dropped,
        duration_s=duration,
        limits=limits,
        refused=tuple(refused[:_MAX_REFUSALS]),
        refused_count=len(refused) + report.more,
        isolation=isolation,
    )


def _write_inputs(home: Path, data: bytes, code: str, token: str) -> int:
    """The trace, the code and the report token in the working directory, owned by the uid the child will drop to
    (if root); the child removes the token before the code runs. Returns the tmpfs bytes they take (whole pages)."""
    (home / "trace.json").write_bytes(data)
    (home / "code.py").write_text(code, encoding="utf-8")
    (home / _TOKEN_FILE).write_text(token, encoding="ascii")
    paths = (home / "trace.json", home / "code.py", home / _TOKEN_FILE)
    if os.geteuid() == 0:
        for path in (home, *paths):
            os.chown(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
    return sum(-(-path.stat().st_size // _PAGE) * _PAGE + _PAGE for path in paths)


def _read_report(lines: list[str], forged: int) -> tuple[SandboxIsolation | None, list[str]]:
    """The isolation lines (before exec, then the child's) and the refusal lines, from the lines of this run's
    token; `forged` lines the code wrote to the descriptor are counted, not believed."""
    lines = list(lines)
    confined: dict[str, Any] = {
        "network_namespace": False,
        "user_namespace": False,
        "no_new_privs": False,
        "landlock_abi": 0,
    }
    notes: list[str] = []
    if not sys.platform.startswith("linux"):
        notes.append(
            f"no namespaces, no-new-privileges, Landlock or disk quota on {sys.platform}: the audit hook (which also"
            " counts the files the code makes) and resource limits only"
        )
    isolation = None
    if sys.platform.startswith("linux") and not (lines and '"uid"' not in lines[0]):
        notes.append("no report from before exec: network namespace, no-new-privileges and Landlock not applied")
    while lines and lines[0].startswith("{"):
        with contextlib.suppress(ValueError, TypeError, KeyError):
            data = json.loads(lines.pop(0))
            notes += [str(n) for n in data.get("notes", ())]
            if "uid" in data:  # the child's line; anything after it was written by the code
                isolation = SandboxIsolation.from_report({**confined, **data, "notes": notes})
                break
            else:
                confined.update(data)
    for note in notes:
        _warn_once(note)
    refused = [line for line in lines if line]
    if forged:
        what = f"the code wrote {forged} line(s) to the sandbox's report descriptor; they are not refusals"
        refused.append(f"report.forged\t{what}")
    return isolation, refused


@functools.lru_cache(maxsize=64)
def _warn_once(note: str) -> None:
    """Log a missing isolation step once per process, not on every `execute_code`."""
    _log.warning("execute_code sandbox: %s", note)


async def _watch_disk(process: asyncio.subprocess.Process, home: str, budget: tuple[int, int]) -> bool:
    """Kill the process group once its working directory holds more than `budget` (bytes allocated, entries): the
    checked budget where it is no tmpfs (on a tmpfs the host's folder holds the inputs only)."""
    while process.returncode is None:
        await asyncio.sleep(_DISK_POLL_S)
        if _exceeds(home, process.pid, *budget):
            _kill_group(process.pid)
            return True
    return False


def _exceeds(home: str, pid: int, max_bytes: int, max_entries: int) -> bool:
    """Whether the tree under `home`, with the files `pid` holds open but removed (Linux), allocates more than
    `max_bytes`, or the tree has more than `max_entries` entries."""
    used, entries, folders = 0, 0, [home]
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):  # no /proc (macOS): RLIMIT_NOFILE x RLIMIT_FSIZE bounds them
            with contextlib.suppress(OSError):
                held = os.stat(f"/proc/{pid}/fd/{fd}")
                used += held.st_blocks * 512 if held.st_nlink == 0 and stat.S_ISREG(held.st_mode) else 0
    while folders:
        with contextlib.suppress(OSError), os.scandir(folders.pop()) as found:
            for entry in found:
                entries += 1
                with contextlib.suppress(OSError):
                    used += entry.stat(follow_symlinks=False).st_blocks * 512  # allocated: holes are free
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                if used > max_bytes or entries > max_entries:
                    return True
    return False


async def _wait(process: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """Wait for the process to end; `True` if it was still running at the time limit."""
    try:
        await asyncio.wait_for(process.wait(), timeout=timeout_s)
    except TimeoutError:
        return True
    return False


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill the process group (the process, and anything the code left behind in it) and reap the process."""
    _kill_group(process.pid)
    if process.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), timeout=_DRAIN_GRACE_S)


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, int]:
    """Read a stream to its end, keeping the first `cap` bytes; return them and how many were dropped."""
    kept = bytearray()
    dropped = 0
    while chunk := await stream.read(_READ_CHUNK):
        room = cap - len(kept)
        kept += chunk[:room] if room > 0 else b""
        dropped += max(0, len(chunk) - max(room, 0))
    return bytes(kept), dropped


async def _finish(*readers: asyncio.Future[tuple[bytes, int]]) -> list[tuple[str, int]]:
    """The readers' output; a pipe still held open by an escaped process is given up after a grace period."""
    out: list[tuple[str, int]] = []
    for reader in readers:
        try:
            data, dropped = await asyncio.wait_for(reader, timeout=_DRAIN_GRACE_S)
        except TimeoutError:
            data, dropped = b"", 0
        out.append((data.decode("utf-8", errors="replace"), dropped))
    return out


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
