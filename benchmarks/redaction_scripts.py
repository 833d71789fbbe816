"""The redaction prescan by script: ASCII, accented Latin, CJK and emoji texts, µs per text.

    .venv/bin/python benchmarks/redaction_scripts.py [--texts 500] [--chars 200] [--rounds 15] [--smoke]

Clean texts of about `--chars` characters each, `--texts` of them as one record (a `serve` request's attribute
texts): `Prefilter.clean` on each text alone, `Prefilter.unclean` on the record (one pass of each gate over the
join), the same record text by text (`clean` on each: what `unclean` did for any record with one non-ASCII
character), and `Redactor.redact_texts` on the record (what serve's intake calls). Each figure is the fastest of
`--rounds` interleaved rounds (on a shared machine the slower ones measure the neighbours), divided by the number
of texts; the load average is printed beside the table.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable

from ace.redaction import Redactor

WORDS = {  # a text of each script, split into words at its spaces
    "ASCII": "the agent should confirm the booking before it changes a flight and ask the user for the details",
    "accented Latin": "l'agent doit vérifier la réservation avant de modifier le vol, über größere Straßen, año",
    "CJK": "代理 应在 更改航班 之前 确认预订 并首先 向用户 询问 お客様の 予約を 確認して から変更",
    "emoji": "the ✈️ agent 👍 should 🙂 confirm 🚀 the ✅ booking 📅 before 🧳 it changes",
}


def texts_of(words: str, count: int, chars: int, rng: random.Random) -> list[str]:
    """`count` texts of about `chars` characters of `words`, each ending with its number (`[12]`)."""
    out = []
    for n in range(count):
        text: list[str] = []
        while sum(len(w) + 1 for w in text) < chars:
            text.append(rng.choice(words.split()))
        out.append(f"{' '.join(text)} [{n}]")
    return out


def per_text_us(work: dict[str, Callable[[], object]], count: int, rounds: int) -> dict[str, float]:
    """The fastest of `rounds` of each callable's time, in µs per text; the callables alternate round by round."""
    times: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(rounds):
        for name, fn in work.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) / count * 1e6)
    return {name: min(t) for name, t in times.items()}


def work(redactor: Redactor, texts: list[str]) -> dict[str, Callable[[], object]]:
    """What the table times on one record's `texts`, by column."""
    prefilter = redactor._prefilter
    return {
        "clean": lambda: [prefilter.clean(t) for t in texts],
        "unclean": lambda: prefilter.unclean(texts),
        "one by one": lambda: [t for t in texts if not prefilter.clean(t)],
        "redact_texts": lambda: redactor.redact_texts(texts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=500, help="texts per record")
    parser.add_argument("--chars", type=int, default=200, help="characters per text")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="20 texts, 2 rounds")
    args = parser.parse_args()
    count, rounds = (20, 2) if args.smoke else (args.texts, args.rounds)
    redactor = Redactor()
    prefilter = redactor._prefilter
    rng = random.Random(0)
    rows = []
    for script, words in WORDS.items():
        texts = texts_of(words, count, args.chars, rng)
        clean = sum(prefilter.clean(t) for t in texts)
        assert redactor.redact_texts(texts) is None, f"the {script} texts hold something the detectors find"
        us = per_text_us(work(redactor, texts), count, rounds)
        utf8 = sum(len(t.encode()) for t in texts) / sum(len(t) for t in texts)
        rows.append((script, f"{utf8:.2f}", f"{clean}/{count}", *(f"{v:.2f}" for v in us.values())))
    header = ("texts", "UTF-8 bytes/char", "clean", "clean µs", "record µs", "one by one µs", "redact_texts µs")
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"Prescan per text ({count} texts of ~{args.chars} characters a record; fastest of {rounds} rounds; "
        f"load average {load})\n"
    )
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
