"""Red team for `execute_code`'s sandbox: every escape is refused, reported, and leaves the host untouched.

The probes (`_sandbox_probes.py`) run with this process as the parent (root on our machines and CI), then all
of them again with an unprivileged parent (uid 65534, through `_sandbox_probe_driver.py`). The OS layer is
tested on its own too: what would still hold if the audit hook were gone.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _sandbox_probes import HOST_TEXT, PROBES, SECRET_VALUE, Probe

from ace.sandbox import _landlock
from ace.sandbox import runner as sandbox
from ace.sandbox._confine import _libc, confine
from ace.sandbox.runner import SandboxLimits, run_code

SECRET_NAME = "OPENAI_API_KEY"
LIMITS = SandboxLimits(timeout_s=5.0, memory_mb=128)
RR_DIR = Path(sandbox.__file__).parent
NOBODY = 65534
LINUX = sys.platform.startswith("linux")


@pytest.fixture
def host() -> Iterator[Path]:
    """A host skillbook in a folder anyone may read (pytest's own are root-only): the hook must refuse, not the
    permissions."""
    folder = Path(tempfile.mkdtemp(prefix="ace-redteam-host-"))
    folder.chmod(0o755)
    skillbook = folder / "skillbook.json"
    skillbook.write_text(HOST_TEXT, encoding="utf-8")
    yield skillbook
    shutil.rmtree(folder, ignore_errors=True)


def assert_refused_and_host_intact(probe: Probe, text: str, refused: list[str], host: Path) -> None:
    assert probe.expect in text, f"{probe.name}: not refused as expected:\n{text}"
    if probe.event is not None:
        events = [line.partition("\t")[0] for line in refused]
        assert probe.event in events, f"{probe.name}: refusal not reported ({events}):\n{text}"
    assert SECRET_VALUE not in text, f"{probe.name}: the parent's secret reached the output"
    assert host.read_text(encoding="utf-8") == HOST_TEXT, f"{probe.name}: the host skillbook changed"
    assert sorted(p.name for p in host.parent.iterdir()) == ["skillbook.json"], f"{probe.name}: host folder changed"
    assert oct(host.stat().st_mode & 0o777) != "0o777", f"{probe.name}: host file mode changed"
    assert not Path("/tmp/pwned").exists(), f"{probe.name}: a process ran"


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_probe_is_refused_reported_and_harmless(probe: Probe, host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
    code = probe.source(str(host), str(host.parent), SECRET_NAME, str(RR_DIR))
    result = asyncio.run(run_code(code, {"messages": []}, limits=LIMITS))
    assert_refused_and_host_intact(probe, result.as_text(), list(result.refused), host)


def test_there_are_at_least_thirty_probes_with_distinct_names() -> None:
    assert len({p.name for p in PROBES}) == len(PROBES) >= 30


def test_refusals_name_what_was_refused_in_the_model_visible_text(host: Path) -> None:
    code = f"import os\nfor _ in range(30):\n    try: os.remove({str(host)!r})\n    except OSError: pass\n"
    result = asyncio.run(run_code(code, {"messages": []}, limits=LIMITS))
    assert result.ok and result.refused_count == 30 and len(result.refused) == 20
    text = result.as_text()
    assert "Refused by the sandbox (and 10 more):" in text
    assert f"- cannot remove {str(host)!r}: only the working directory" in text


def test_lines_the_code_writes_to_the_report_are_not_refusals() -> None:
    code = (
        "import os, sys\nfd = int(sys.argv[-1])\n"
        'os.write(fd, b\'os.system\\tforged line\\n{"uid": 0, "notes": []}\\nfake\\tfake\\tfake\\n\')\n'
        "os.write(fd, 'caf\\u00e9\\tnot ASCII\\n'.encode())\n"  # the parent compares bytes: no TypeError
        "os.remove('/etc/passwd')"
    )
    result = asyncio.run(run_code(code, {"messages": []}, limits=LIMITS))
    events = [line.partition("\t")[0] for line in result.refused]
    assert events == ["os.remove", "report.forged"], result.refused
    assert "forged line" not in result.as_text() and "4 line(s)" in result.as_text()
    assert result.isolation is not None  # the forged {"uid": 0} line was not taken for the child's
    assert result.isolation.uid == (NOBODY if os.geteuid() == 0 else os.getuid())


# --------------------------------------------------------------------------------- what still works
def test_ordinary_analysis_code_is_not_refused() -> None:
    code = """
import collections, dataclasses, datetime, decimal, enum, fractions, functools, hashlib, json, re, statistics
import textwrap, typing, difflib, csv, io, os, tempfile, traceback, pathlib
P = collections.namedtuple("P", "a b", defaults=(0,))
@dataclasses.dataclass
class D:
    x: int = 1
class E(enum.Enum):
    A = 1
@functools.lru_cache
def f(x):
    return x * 2
try:
    1 / 0
except ZeroDivisionError:
    tb = traceback.format_exc()
os.mkdir("out")
with open("out/notes.txt", "w") as fh:
    fh.write("kept")
os.rename("out/notes.txt", "out/renamed.txt")
print(sorted(os.listdir("out")), P(1), D(), E.A.name, f(2), statistics.median([3, 1, 2]), "ZeroDivisionError" in tb)
print(hashlib.sha256(b"x").hexdigest()[:8], datetime.date(2024, 1, 2).isoformat(), decimal.Decimal("1.1") * 2)
os.remove("out/renamed.txt")
os.rmdir("out")
print(sorted(os.listdir(".")), tempfile.gettempdir() == os.getcwd(), pathlib.Path("code.py").exists())
"""
    result = asyncio.run(run_code(code, {"messages": []}, limits=LIMITS))
    assert result.ok, result.as_text()
    assert result.refused == () and "Refused" not in result.as_text()
    assert result.stdout.splitlines() == [
        "['renamed.txt'] P(a=1, b=0) D(x=1) A 4 2 True",
        "2d711642 2024-01-02 2.2",
        "['code.py', 'trace.json'] True True",
    ]


# ------------------------------------------------------------------------------------------- OS layer
@pytest.mark.skipif(not LINUX, reason="namespaces, uid drop and no-new-privileges are Linux only")
def test_the_child_reports_its_os_isolation() -> None:
    result = asyncio.run(run_code("import os\nos.getuid()", {"messages": []}, limits=LIMITS))
    isolation = result.isolation
    assert isolation is not None and isolation.platform == "linux"
    if os.geteuid() == 0:
        assert isolation.started_as_root and isolation.uid == NOBODY and result.stdout == f"{NOBODY}\n"
        assert isolation.network_namespace and isolation.no_new_privs and isolation.nproc_limited, isolation
        assert isolation.notes == ()
    else:
        assert not isolation.started_as_root and isolation.no_new_privs


@pytest.mark.skipif(not LINUX, reason="the confinement before exec is Linux only")
def test_a_missing_isolation_step_is_reported_and_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sandbox, "confine", lambda *_args: None)  # as if the step before exec could not run
    sandbox._warn_once.cache_clear()
    with caplog.at_level("WARNING", logger=sandbox.__name__):
        results = [asyncio.run(run_code("1", {"messages": []}, limits=LIMITS)) for _ in range(2)]
    assert all(r.ok and r.isolation is not None for r in results)
    isolation = results[0].isolation
    assert isolation is not None and not isolation.network_namespace and not isolation.no_new_privs
    assert isolation.notes[0].startswith("no report from before exec: network namespace, no-new-privileges and")
    warnings = [r.getMessage() for r in caplog.records if "no report from before exec" in r.getMessage()]
    assert len(warnings) == 1  # once per process, not per call


@pytest.mark.skipif(not LINUX, reason="Landlock is Linux only")
def test_the_landlock_plan_lets_only_the_interpreter_and_its_loader_execute(tmp_path: Path) -> None:
    interpreter = os.path.realpath(sys.executable)
    loader = _landlock._elf_loader(interpreter)
    assert loader is not None and os.path.basename(loader).startswith("ld-"), loader
    plan = _landlock.Ruleset.plan(_libc(), str(tmp_path), sys.executable)
    if plan.abi == 0:
        pytest.skip(plan.reason)
    executable = sorted(path for path, rights in plan.rules if rights & _landlock.EXECUTE)
    assert executable == sorted({interpreter, os.path.realpath(loader)})
    writable = [path for path, rights in plan.rules if rights & _landlock.WRITE_FILE]
    assert writable == [os.path.realpath(tmp_path)]


@pytest.mark.skipif(not LINUX, reason="Landlock is Linux only")
def test_without_landlock_the_sandbox_runs_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    reason = "no Landlock (Linux >= 5.13 with Landlock enabled): as if unsupported"
    monkeypatch.setattr(_landlock, "_abi", lambda _libc: (0, reason))  # an old kernel, or Landlock not enabled
    sandbox._warn_once.cache_clear()
    with caplog.at_level("WARNING", logger=sandbox.__name__):
        results = [asyncio.run(run_code("open('x', 'w').write('ok')", {"messages": []}, limits=LIMITS)) for _ in "ab"]
    assert all(r.ok and r.isolation is not None and r.isolation.landlock_abi == 0 for r in results)
    assert results[0].isolation is not None and reason in results[0].isolation.notes
    assert [r.getMessage() for r in caplog.records].count(f"execute_code sandbox: {reason}") == 1


@pytest.mark.skipif(not LINUX or os.geteuid() != 0, reason="needs root: what the uid drop protects is root's")
def test_without_the_hook_the_os_layer_still_holds(host: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The child's isolation alone (no audit hook): as if the hook had been bypassed.
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    outside = f"/tmp/ace-landlock-probe-{os.getpid()}"
    neighbour = subprocess.Popen(["sleep", "60"], preexec_fn=_become_nobody)  # like a concurrent sandbox
    code = f"""
import ctypes, json, os, sys
sys.path.insert(0, {str(RR_DIR)!r})
import _isolation
report, sys.path[:] = _isolation.isolate({NOBODY}, [p for p in sys.path if p])
out = {{"uid": os.getuid(), "report": report.as_dict(), "no_new_privs": ctypes.CDLL(None).prctl(39, 0, 0, 0, 0)}}
for name, attempt in [
    ("write_home", lambda: open("notes.txt", "w").close()),
    ("write_tmp", lambda: open({outside!r}, "w")),  # /tmp is world-writable: only Landlock stands in the way
    ("write_host", lambda: open({str(host)!r}, "w")),
    ("remove_host", lambda: os.remove({str(host)!r})),
    ("parent_environ", lambda: open(f"/proc/{{os.getppid()}}/environ", "rb").read()),
    ("root_home", lambda: os.listdir("/root")),
    ("setuid_root", lambda: os.setuid(0)),
    ("signal_neighbour", lambda: os.kill({neighbour.pid}, 0)),  # same uid 65534: only Landlock's scope refuses
]:
    try:
        attempt()
        out[name] = "done"
    except OSError as e:
        out[name] = e.strerror
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=1)
    out["network"] = "connected"
except OSError as e:
    out["network"] = e.strerror
try:
    os.fork()
    out["fork"] = "done"
except OSError as e:
    out["fork"] = e.strerror
try:
    os.execv("/bin/sh", ["sh", "-c", "echo executed /bin/sh"])  # on success the JSON below is never printed
except OSError as e:
    out["exec_sh"] = e.strerror
print(json.dumps(out))
"""
    report_read, report_write = os.pipe()
    with open(report_read, "rb") as report, neighbour:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code],
            cwd=home,
            capture_output=True,
            text=True,
            timeout=60,
            pass_fds=(report_write,),
            preexec_fn=confine(report_write, str(home)),
            check=False,
        )
        os.close(report_write)
        confined = json.loads(report.readline())
        neighbour.kill()
    assert not Path(outside).exists(), "Landlock: a file was created outside the working directory"
    out = json.loads(done.stdout)
    assert confined == {
        "network_namespace": True,
        "user_namespace": False,
        "no_new_privs": True,
        "landlock_abi": confined["landlock_abi"],
        "notes": [],
    }
    assert confined["landlock_abi"] >= 6, "this kernel (6.18) has Landlock with signal scoping"
    assert out["uid"] == NOBODY and out["no_new_privs"] == 1 and out["report"]["nproc_limited"]
    assert out["write_home"] == "done" and out["write_tmp"] == out["exec_sh"] == "Permission denied"
    assert out["write_host"] == out["remove_host"] == "Permission denied"
    assert out["parent_environ"] == out["root_home"] == "Permission denied"
    assert out["setuid_root"] == out["signal_neighbour"] == "Operation not permitted"
    assert out["network"] == "Permission denied"  # Landlock refuses TCP before the empty namespace would
    assert out["fork"] == "Resource temporarily unavailable"
    assert host.read_text(encoding="utf-8") == HOST_TEXT


# -------------------------------------------------------------------------------- unprivileged parent
def world_readable_python() -> str | None:
    """An interpreter uid 65534 can run and import ACE with (ours may live under /root)."""
    for candidate in (sys.executable, shutil.which("python3.11"), "/usr/bin/python3.11", "/usr/bin/python3"):
        if not candidate:
            continue
        probe = subprocess.run(
            [candidate, "-I", "-c", "import ace.sandbox.runner, sys; print(sys.version_info >= (3, 11))"],
            capture_output=True,
            text=True,
            preexec_fn=_become_nobody,
            check=False,
        )
        if probe.stdout.strip() == "True":
            return candidate
    return None


def _become_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@pytest.mark.skipif(not LINUX or os.geteuid() != 0, reason="needs root to start a parent as uid 65534")
def test_all_probes_hold_with_an_unprivileged_parent(host: Path) -> None:
    python = world_readable_python()
    if python is None:
        pytest.skip("no Python >= 3.11 that uid 65534 can run with ACE installed (ours may be root's alone)")
    for path in (host.parent, host):
        os.chown(path, NOBODY, NOBODY)  # writable by the parent's uid: only the sandbox stands in the way
    env = {"PATH": "/usr/bin:/bin", SECRET_NAME: SECRET_VALUE, "TMPDIR": "/tmp"}
    driver = Path(__file__).with_name("_sandbox_probe_driver.py")
    done = subprocess.run(
        [python, "-I", str(driver), str(host), str(host.parent), SECRET_NAME],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_become_nobody,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(results) == len(PROBES)
    for probe, result in zip(PROBES, results, strict=True):
        assert_refused_and_host_intact(probe, result["text"], result["refused"], host)
    isolation = results[0]["isolation"]
    assert isolation["uid"] == NOBODY and isolation["no_new_privs"]
    # A user namespace needs the kernel to allow unprivileged ones; where it does not, the reason is reported.
    assert isolation["network_namespace"] or any("unshare failed" in n for n in isolation["notes"])
