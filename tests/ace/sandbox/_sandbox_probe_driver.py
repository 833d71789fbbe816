"""Run the red-team probes with this process as the sandbox's parent; print one JSON result per probe.

`python _sandbox_probe_driver.py HOST HOST_DIR SECRET_NAME`, with an interpreter that imports `ace`, so that a test
can run the parent as an unprivileged user.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _sandbox_probes import PROBES

from ace.sandbox import runner as sandbox


async def main(host: str, host_dir: str, secret: str) -> list[dict[str, Any]]:
    limits = sandbox.SandboxLimits(timeout_s=5.0, memory_mb=128)
    gate = asyncio.Semaphore(4)
    rr_dir = str(Path(sandbox.__file__).parent)

    async def one(code: str) -> dict[str, Any]:
        async with gate:
            result = await sandbox.run_code(code, {"messages": []}, limits=limits)
        isolation = result.isolation
        return {
            "text": result.as_text(),
            "refused": list(result.refused),
            "isolation": None
            if isolation is None
            else {
                "uid": isolation.uid,
                "notes": list(isolation.notes),
                "network_namespace": isolation.network_namespace,
                "user_namespace": isolation.user_namespace,
                "no_new_privs": isolation.no_new_privs,
            },
        }

    return list(await asyncio.gather(*(one(p.source(host, host_dir, secret, rr_dir)) for p in PROBES)))


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:4]))))
