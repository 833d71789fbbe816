"""Issue #24's sandbox findings: the disk the code can fill, denied modules without an import event, the report.

Every probe of `_disk_quota_probes.py` runs with this process as the parent (root here: a tmpfs in the child's
mount namespace), the disk probes again with the tmpfs refused (the hook's file count and the parent's checked
budget alone) and with an unprivileged parent (a tmpfs in a user namespace). A probe that takes the host's free
disk, or leaves the host a slow cleanup, is an escape.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import _sandbox_probes
import pytest
from _disk_quota_probes import ALL, DISK_PROBES, MAX_DISK_MB, MAX_FILES, Probe

from ace.sandbox import _confine as _sandbox_confine
from ace.sandbox._report import ReportReader
from ace.sandbox.runner import SandboxLimits, SandboxResult, run_code

LIMITS = SandboxLimits(timeout_s=10.0, memory_mb=128, max_disk_mb=MAX_DISK_MB, max_files=MAX_FILES)
HOST_TEXT = '{"schema_version": "2", "skills": ["the host skillbook"]}'
LINUX = sys.platform.startswith("linux")
NOBODY = 65534
MAX_HOST_LOSS = 1 << 30
"""Free disk the host may lose during one probe: noise from other processes; filling it is gigabytes."""
MAX_AFTERMATH_S = 2.0
"""Seconds `run_code` may take after the child ended (reading its output, removing its directory)."""


@pytest.fixture
def host() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ace-quota-host-"))
    folder.chmod(0o755)
    skillbook = folder / "skillbook.json"
    skillbook.write_text(HOST_TEXT, encoding="utf-8")
    yield skillbook
    shutil.rmtree(folder, ignore_errors=True)


def run(probe: Probe, host: Path) -> tuple[SandboxResult, int, float]:
    """The probe's result, the host's free disk lost meanwhile, and the seconds after the child ended."""
    free = shutil.disk_usage(tempfile.gettempdir()).free
    started = time.perf_counter()
    result = asyncio.run(run_code(probe.source(str(host), str(host.parent)), {"messages": []}, limits=LIMITS))
    aftermath = time.perf_counter() - started - result.duration_s
    return result, free - shutil.disk_usage(tempfile.gettempdir()).free, aftermath


def assert_held(probe: Probe, text: str, refused: list[str], count: int, lost: int, host: Path) -> None:
    assert lost < MAX_HOST_LOSS, f"{probe.name}: the host lost {lost >> 20} MiB of free disk"
    assert probe.expect in text, f"{probe.name}: not refused as expected:\n{text}"
    if probe.event is not None:
        events = [line.partition("\t")[0] for line in refused]
        assert probe.event in events, f"{probe.name}: refusal not reported ({events}):\n{text}"
    if probe.refusals is not None:
        assert count == probe.refusals, f"{probe.name}: {count} refusals reported, {probe.refusals} made"
    assert host.read_text(encoding="utf-8") == HOST_TEXT, f"{probe.name}: the host skillbook changed"
    assert sorted(p.name for p in host.parent.iterdir()) == ["skillbook.json"], f"{probe.name}: host folder changed"


@pytest.mark.parametrize("probe", ALL, ids=[p.name for p in ALL])
def test_probe_holds_and_the_host_keeps_its_disk(probe: Probe, host: Path) -> None:
    result, lost, aftermath = run(probe, host)
    assert_held(probe, result.as_text(), list(result.refused), result.refused_count, lost, host)
    assert not result.timed_out, f"{probe.name}: ran into the time limit instead of a refusal:\n{result.as_text()}"
    assert aftermath < MAX_AFTERMATH_S, f"{probe.name}: {aftermath:.1f} s after the child ended (cleanup)"
    if LINUX and probe in DISK_PROBES:
        assert result.isolation is not None and result.isolation.disk_quota, result.isolation


def test_the_red_team_has_at_least_120_probes_with_distinct_names() -> None:
    names = [p.name for p in _sandbox_probes.PROBES] + [p.name for p in ALL]
    assert len(set(names)) == len(names) >= 120, len(names)


@pytest.mark.skipif(not LINUX, reason="the tmpfs is Linux only")
def test_the_working_directory_is_a_tmpfs_of_the_limits_and_the_files_count_once() -> None:
    code = (
        "import os\nv = os.statvfs('.')\nprint(v.f_blocks * v.f_frsize >> 20, v.f_files, sorted(os.listdir('.')))\n"
        f"for i in range({MAX_FILES}):\n    open(f'f{{i}}', 'w').close()\n"
    )
    result = asyncio.run(run_code(code, {"messages": ["x" * 100_000]}, limits=LIMITS))
    size_mb, inodes, names = result.stdout.split(" ", 2)
    assert MAX_DISK_MB <= int(size_mb) <= MAX_DISK_MB + 1 and int(inodes) == MAX_FILES + 8, result.stdout
    assert names.strip() == "['code.py', 'trace.json']"  # the inputs copied in, the report token already gone
    assert result.ok and result.refused == (), result.as_text()  # exactly max_files may be made


@pytest.mark.skipif(not LINUX, reason="the tmpfs is Linux only")
def test_without_a_tmpfs_the_file_count_and_the_checked_budget_hold(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As on macOS, or where no mount namespace may be made (Docker's default seccomp profile).
    def refused(_libc: object, _home: str, _quota: object, _ids: object, notes: list[str]) -> bool:
        notes.append(f"{_sandbox_confine.NO_QUOTA}: as if refused")
        return False

    monkeypatch.setattr(_sandbox_confine, "_mount_quota", refused)
    names = {"fill-with-writes", "fill-with-copy-file-range", "fill-in-subfolders", "sparse-then-filled"}
    names.add("fill-removed-but-open-files")
    for probe in DISK_PROBES:
        result, lost, aftermath = run(probe, host)
        assert result.isolation is not None and not result.isolation.disk_quota
        assert any("as if refused" in n for n in result.isolation.notes)
        if probe.name in names:  # no ENOSPC on the host's disk: the parent's budget stops the code
            assert result.disk_exceeded, f"{probe.name}:\n{result.as_text()}"
            assert "Stopped: the code wrote more than the 64 MB or 1000 files" in result.as_text()
            assert lost < MAX_HOST_LOSS and result.exit_code == -9
            host_probe = Probe(probe.name, "", "", None)
        else:
            host_probe = probe
        assert_held(host_probe, result.as_text(), list(result.refused), result.refused_count, lost, host)
        assert aftermath < MAX_AFTERMATH_S, f"{probe.name}: {aftermath:.1f} s after the child ended"


@pytest.mark.skipif(not LINUX or os.geteuid() != 0, reason="needs root to start a parent as uid 65534")
def test_disk_probes_hold_with_an_unprivileged_parent(host: Path) -> None:
    for path in (host.parent, host):
        os.chown(path, NOBODY, NOBODY)  # writable by the parent's uid: only the sandbox stands in the way
    driver = f"""
import asyncio, json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from _disk_quota_probes import DISK_PROBES
from ace.sandbox.runner import SandboxLimits, run_code
limits = SandboxLimits(timeout_s=10.0, memory_mb=128)
out = []
for probe in DISK_PROBES:
    r = asyncio.run(run_code(probe.source({str(host)!r}, {str(host.parent)!r}), {{"messages": []}}, limits=limits))
    out.append([r.as_text(), list(r.refused), r.refused_count, r.isolation.disk_quota, r.isolation.uid])
print(json.dumps(out))
"""
    free = shutil.disk_usage(tempfile.gettempdir()).free
    done = subprocess.run(
        [sys.executable, "-I", "-c", driver],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": "/tmp"},
        preexec_fn=_become_nobody,
        timeout=600,
        check=False,
    )
    if "Permission denied" in done.stderr and done.returncode != 0:
        pytest.skip(f"uid 65534 cannot run this interpreter with ACE: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    lost = free - shutil.disk_usage(tempfile.gettempdir()).free
    for probe, (text, refused, count, disk_quota, uid) in zip(DISK_PROBES, json.loads(done.stdout), strict=True):
        assert_held(probe, text, refused, count, lost, host)
        assert disk_quota and uid == NOBODY, (probe.name, disk_quota, uid)  # a tmpfs in a user namespace


def _become_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def test_the_report_reader_keeps_split_lines_counts_the_rest_and_skips_overlong_ones() -> None:
    read, write = os.pipe()
    token = "0123abcd"
    with ReportReader(read, token) as report:
        os.write(write, b'0123abcd\t{"uid": 1}\n0123ab')  # a line split across two reads
        report.stop()
        os.write(write, b"cd\tos.remove\tone\nforged\n" + b"y" * 20_000)  # an unterminated overlong line
        report.stop()
        os.write(write, b"y" * 20_000 + b"\n0123abcd\tos.remove\ttwo\n")  # the hook starts its lines with \n
        os.write(write, b"".join(b"0123abcd\tos.remove\tmore\n" for _ in range(100)))
        os.close(write)
        report.stop()
        assert report.lines[:3] == ['{"uid": 1}', "os.remove\tone", "os.remove\ttwo"]
        assert len(report.lines) == 64 and report.more == 102 + 1 - 64 and report.forged == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_disk_mb": 0}, "max_disk_mb must be at least 1"),
        ({"max_files": 9}, "max_files must be at least 10 (a tenth may be folders)"),
    ],
)
def test_quota_limits_are_checked(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SandboxLimits(**kwargs)


def test_a_big_trace_fits_beside_the_quota() -> None:
    trace = {"messages": ["y" * (1 << 20)] * 40}  # 40 MiB of trace, 8 MiB of quota: the inputs are not counted
    code = "print(len(trace['messages']))\nopen('out', 'wb').write(b'z' * (6 << 20))"
    result = asyncio.run(run_code(code, trace, limits=SandboxLimits(timeout_s=20.0, memory_mb=512, max_disk_mb=8)))
    assert result.ok and result.stdout == f"40\n{6 << 20}\n", result.as_text()
