"""Statistics over seeds: mean with a Student-t 95% interval."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def mean_ci(values: Sequence[float], level: float = 0.95) -> dict[str, float | None]:
    """Mean, sample std, n and the half-width of the t-interval (None when n < 2: JSON has no NaN)."""
    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    if n == 0:
        raise ValueError("mean_ci needs at least one value")
    mean = float(v.mean())
    if n < 2:
        return {"mean": mean, "std": None, "n": n, "ci95": None}
    from scipy import stats  # imported here: scipy.stats costs ~0.7 s at every stage start

    std = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, df=n - 1) * std / math.sqrt(n))
    return {"mean": mean, "std": std, "n": n, "ci95": half}
