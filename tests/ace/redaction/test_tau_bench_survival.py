"""On the 120 real tau-bench trajectories, redaction keeps every value the benchmark needs and finds only e-mails."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ace.redaction import Redactor, count_kinds
from ace.redaction.scan import ID_KEYS

TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"


def _words(values: set[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, values), key=len, reverse=True)) + r")\b")


def _identifiers(data: Path) -> dict[str, re.Pattern[str]]:
    """The benchmark's own values (as `benchmarks/redaction.py` counts them), from its database where it has them."""
    flights: dict[str, dict[str, Any]] = json.loads((data / "flights.json").read_text(encoding="utf-8"))
    reservations = json.loads((data / "reservations.json").read_text(encoding="utf-8"))
    return {
        "reservation id": _words(set(reservations)),
        "flight number": _words(set(flights)),
        "airport code": _words({f[k] for f in flights.values() for k in ("origin", "destination")}),
        "amount": re.compile(r"\$\d[\d,]*(?:\.\d+)?|\b(?:amount|price|balance|total)\\?\"?:\s*\d+(?:\.\d+)?"),
        "date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    }


def test_reservation_ids_flight_numbers_amounts_and_dates_survive_redaction(airline_data: Path) -> None:
    trajectories: list[dict[str, Any]] = json.loads((airline_data / TRAJECTORIES).read_text(encoding="utf-8"))
    assert len(trajectories) == 120
    patterns = _identifiers(airline_data)
    redactor = Redactor()
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for trajectory in trajectories:
        redacted, findings = redactor.redact_data(trajectory, skip_keys=ID_KEYS)
        kinds.update(count_kinds(findings))
        raw, clean = json.dumps(trajectory), json.dumps(redacted)
        for name, pattern in patterns.items():
            before[name] += len(pattern.findall(raw))
            after[name] += len(pattern.findall(clean))
    assert all(before[name] > 100 for name in patterns), before
    assert after == before
    assert set(kinds) == {"email"}, f"only the simulated users' e-mails are personal data here, not {kinds}"
