"""The gate's statistics on per-task differences: the sign-flip permutation test and what a run can resolve.

The sign-flip test asks: if the skillbook made no difference, each task's difference (candidate - baseline) would
be as likely negative as positive, so every pattern of signs is equally likely. The p-value is the share of sign
patterns whose |sum| is at least the observed |sum|. A task whose difference is zero is left out: flipping it
changes nothing, so with z zero tasks both the count of patterns and the count of patterns at least as extreme
double z times and the exact p-value is the same with or without them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

__all__ = [
    "EXACT_LIMIT",
    "MONTE_CARLO_PATTERNS",
    "POWER",
    "Resolution",
    "SignFlipTest",
    "resolution",
    "sign_flip_test",
    "smallest_p_value",
    "tasks_needed",
]

EXACT_LIMIT = 20
"""Up to this many non-zero differences, the test enumerates all 2^n sign patterns."""
MONTE_CARLO_PATTERNS = 200_000
"""Beyond `EXACT_LIMIT`, this many seeded random sign patterns."""
POWER = 0.8
"""The power at which `Resolution.mde` is given."""
_ZERO = 1e-12


@dataclass(frozen=True, kw_only=True)
class SignFlipTest:
    """A two-sided sign-flip permutation test of the mean of per-task differences."""

    p_value: float
    method: Literal["exact", "monte-carlo"]
    nonzero: int
    """Tasks whose difference is not zero: the test's n."""
    patterns: int
    """Sign patterns counted: 2^nonzero (exact) or the Monte Carlo draws."""
    seed: int | None
    """The Monte Carlo seed (`None` for the exact test)."""


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """The sum of `values` under each of the 2^len sign patterns (built by doubling: +x and -x of every sum)."""
    sums = np.zeros(1)
    for x in values:
        sums = np.concatenate((sums + x, sums - x))
    return sums


def _exact_extreme(d: np.ndarray, threshold: float) -> int:
    """How many of the 2^n sign patterns give |sum| >= `threshold` (> 0): every pattern counted, by meeting in the
    middle (the sums of each half's patterns, one half sorted, each sum of the other half looked up in it)."""
    half = d.size // 2
    left, right = _signed_sums(d[:half]), np.sort(_signed_sums(d[half:]))
    above = right.size - np.searchsorted(right, threshold - left, side="left")
    below = np.searchsorted(right, -threshold - left, side="right")
    return int(above.sum() + below.sum())


def sign_flip_test(
    differences: Sequence[float] | np.ndarray,
    *,
    seed: int = 0,
    exact_limit: int = EXACT_LIMIT,
    patterns: int = MONTE_CARLO_PATTERNS,
) -> SignFlipTest:
    """p-value of the observed |sum of differences| under random signs (zeros left out, see the module doc).

    Exact (every sign pattern) for up to `exact_limit` non-zero differences; beyond, `patterns` seeded random
    patterns with p = (extreme + 1) / (patterns + 1), the observed pattern counted as one of them so p is never 0.
    No non-zero difference gives p = 1.
    """
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.abs(d) > _ZERO]
    m = int(d.size)
    if m == 0:
        return SignFlipTest(p_value=1.0, method="exact", nonzero=0, patterns=1, seed=None)
    observed = float(abs(d.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))  # sums of the same numbers in another order round differently
    if m <= exact_limit:
        total = 1 << m
        extreme = total if observed <= tol else _exact_extreme(d, observed - tol)
        return SignFlipTest(p_value=extreme / total, method="exact", nonzero=m, patterns=total, seed=None)
    rng = np.random.default_rng(seed)
    extreme, signed = 0, float(d.sum())
    rows = max(1, 2_000_000 // m)
    for start in range(0, patterns, rows):
        # one random bit per task (packed bytes, unpacked): a bit 1 keeps the sign, 0 flips it
        packed = rng.integers(0, 256, size=(min(rows, patterns - start), (m + 7) // 8), dtype=np.uint8)
        keep = np.unpackbits(packed, axis=1)[:, :m]
        sums = 2.0 * (keep @ d) - signed
        extreme += int(np.count_nonzero(np.abs(sums) >= observed - tol))
    return SignFlipTest(
        p_value=(extreme + 1) / (patterns + 1), method="monte-carlo", nonzero=m, patterns=patterns, seed=seed
    )


def smallest_p_value(tasks: int) -> float:
    """The smallest p the two-sided exact test can give with `tasks` non-zero differences: 2 / 2^tasks (all in one
    direction; the pattern and its mirror image are the only ones as extreme)."""
    return min(1.0, 2.0 / 2.0**tasks) if tasks > 0 else 1.0


def tasks_needed(alpha: float) -> int:
    """The fewest tasks that must all move the same way for the exact test to reach p < `alpha`."""
    return max(1, math.floor(math.log2(2.0 / alpha)) + 1)


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """What a run of this size can tell apart from noise."""

    tasks: int
    trials: int
    min_p_value: float
    """The smallest p-value any outcome on `tasks` tasks can give (2 / 2^tasks)."""
    tasks_needed: int
    """The fewest tasks that must all move the same way for p < alpha."""
    smallest_effect: float | None
    """The smallest mean difference in success rate that can be promoted at all: `tasks_needed` tasks each one
    trial better (1 / trials) and no task worse, over `tasks` tasks; `None` when there are fewer tasks than that."""
    mde: float | None
    """The minimum detectable effect: the mean difference a run with this many tasks and the observed spread of
    the differences detects with 80 % power at alpha (normal approximation, (z_(1-alpha/2) + z_0.8) * sd / sqrt(n));
    `None` for fewer than two tasks or no spread."""


def resolution(differences: Sequence[float] | np.ndarray, *, trials: int, alpha: float) -> Resolution:
    """The resolution of a paired run with these per-task differences, `trials` trials per task."""
    d = np.asarray(differences, dtype=np.float64)
    n = int(d.size)
    needed = tasks_needed(alpha)
    sd = float(d.std(ddof=1)) if n >= 2 else 0.0
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(POWER)
    return Resolution(
        tasks=n,
        trials=trials,
        min_p_value=smallest_p_value(n),
        tasks_needed=needed,
        smallest_effect=needed / (trials * n) if n >= needed else None,
        mde=z * sd / math.sqrt(n) if n >= 2 and sd > 0 else None,
    )
