"""A run's gate verdict for its page: `gate.json` (written by `ace-eval e2e --publish` or `gate run`) as the gate's
own rows and both sides' pass^k."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ace_eval.gate import GATE_FILE, GateResult, gate_rows, pass_hat_k_cells

__all__ = ["gate_evidence"]


def gate_evidence(folder: Path) -> dict[str, Any] | None:
    """The verdict in `folder/gate.json` as the page shows it; `None` when the folder has none, and the reason in
    `error` when it cannot be read as the gate's."""
    path = folder / GATE_FILE
    if not path.is_file():
        return None
    try:
        result = GateResult.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as e:
        error = f"{path.name} is not the gate's verdict ({type(e).__name__}); rerun the gate"
        return {"error": error, "decision": None, "rows": [], "pass_k": []}
    return {"error": None, "decision": result.decision, "rows": gate_rows(result), "pass_k": pass_hat_k_cells(result)}
