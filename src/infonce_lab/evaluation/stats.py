"""Statistics over seeds (mean with a Student-t 95% interval) and over encoders (OLS with t-intervals)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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


def ols_ci(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> dict[str, Any]:
    """Least squares of y on the columns of x plus an intercept, with classical standard errors
    and t-intervals — the textbook fit behind "accuracy falls with alignment *and* uniformity".

    numpy's ``lstsq`` and scipy's t quantile, not statsmodels: three coefficients and their
    intervals do not justify a dependency. Returns ``coef``/``se``/``ci_low``/``ci_high`` (one
    entry per column of x, intercept excluded), ``r2``, ``n`` and ``dof``.
    """
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"ols_ci: x must be (n, k) with n = len(y); got {x.shape} and {y.shape}")
    n, k = x.shape
    dof = n - k - 1
    if dof < 1:
        raise ValueError(f"ols_ci: {n} points cannot fit {k} slopes and an intercept")
    design = np.column_stack([np.ones(n), x])
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ beta
    sse = float(resid @ resid)
    sst = float(((y - y.mean()) ** 2).sum())
    cov = sse / dof * np.linalg.pinv(design.T @ design)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    q = float(stats.t.ppf(0.5 + level / 2, df=dof))
    return {"coef": beta[1:].tolist(), "se": se[1:].tolist(),
            "ci_low": (beta[1:] - q * se[1:]).tolist(), "ci_high": (beta[1:] + q * se[1:]).tolist(),
            "r2": 1.0 - sse / sst if sst > 0 else None, "n": n, "dof": dof}
