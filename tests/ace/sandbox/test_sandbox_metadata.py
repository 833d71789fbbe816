"""Issue 37 (low): sandboxed code can `os.stat` a host path; that is documented in the threat model, and the
content stays out of reach (fail on e5bcddd: the documentation left out the owner and why stat is not refused)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from ace.sandbox.runner import SandboxLimits, run_code

DOCS = Path(__file__).resolve().parents[3] / "docs" / "sandbox.md"


def test_stat_of_a_host_path_tells_its_size_not_its_content() -> None:
    folder = Path(tempfile.mkdtemp(prefix="ace-stat-host-"))
    try:
        folder.chmod(0o755)
        host = folder / "notes.txt"
        host.write_text("HOST-CONTENT-1234")
        code = (
            "import os\n"
            f"print('size', os.stat({str(host)!r}).st_size)\n"
            f"try:\n    open({str(host)!r}).read()\nexcept PermissionError as e:\n    print('refused', e)\n"
        )
        result = asyncio.run(run_code(code, {"messages": []}, limits=SandboxLimits(timeout_s=5.0, memory_mb=128)))
        text = result.as_text()
        assert "size 17" in text and "refused" in text and "HOST-CONTENT-1234" not in text
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_threat_model_says_what_stat_tells_and_why_it_is_not_refused() -> None:
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert "its size, mode, owner and times (never its content" in text
    assert "the code can take a wrapper's original back" in text
