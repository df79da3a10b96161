"""Statistics over seeds and encoders: t-inference on means and paired differences (with p-values
at any null value, so equivalence and non-inferiority tests are one call), a block-pooled
difference across settings, Holm's step-down adjustment, and least squares with classical or
cluster-robust intervals."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class TInference:
    """A mean whose estimation error is Student-t: ``(estimate − μ)/se ~ t(df)``.

    One object answers every question a rule asks of a mean — its interval at any level, and the
    one-sided p-value against any null value θ — so a superiority, equivalence (TOST) or
    non-inferiority test is a choice of θ, not a separate routine. ``se == 0`` (identical
    values) is degenerate: the p-values are then 0 or 1 by the sign of estimate − θ.
    """

    mean: float
    se: float
    df: int
    n: int

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        from scipy import stats

        half = float(stats.t.ppf(0.5 + level / 2, df=self.df)) * self.se
        return self.mean - half, self.mean + half

    def p_greater(self, theta: float) -> float:
        """One-sided p for H0: μ ≤ θ (small when the data show μ > θ)."""
        from scipy import stats

        if self.se == 0:
            return 0.0 if self.mean > theta else 1.0
        return float(stats.t.sf((self.mean - theta) / self.se, df=self.df))

    def p_less(self, theta: float) -> float:
        """One-sided p for H0: μ ≥ θ (small when the data show μ < θ)."""
        from scipy import stats

        if self.se == 0:
            return 0.0 if self.mean < theta else 1.0
        return float(stats.t.cdf((self.mean - theta) / self.se, df=self.df))

    def minimal_detectable_effect(self, power: float = 0.8, alpha: float = 0.05) -> float:
        """The true mean the two-sided t-test at ``alpha`` detects with probability ``power`` on
        ``n`` values with this sample's SD (se·√n): the study's resolution, read off the
        observed spread, not a property of the effect (statsmodels' ``TTestPower``)."""
        from statsmodels.stats.power import TTestPower

        d = TTestPower().solve_power(effect_size=None, nobs=self.n, alpha=alpha, power=power,
                                     alternative="two-sided")
        return float(d) * self.se * math.sqrt(self.n)

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {"mean": self.mean, "se": self.se, "df": self.df, "n": self.n,
                "ci_low": lo, "ci_high": hi}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TInference:
        return cls(float(d["mean"]), float(d["se"]), int(d["df"]), int(d["n"]))


def t_mean(values: Sequence[float]) -> TInference | None:
    """t-inference on the mean of independent values (None with fewer than two: no interval)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return None
    return TInference(float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)), v.size - 1,
                      int(v.size))


def block_pooled_difference(diffs: Mapping[str, Mapping[Any, float]]) -> TInference | None:
    """One paired difference pooled over blocks (settings such as schedules or datasets) that
    share their seeds: each seed's mean difference over the blocks, then a t-test over seeds.

    Runs of one seed in different blocks start from the same initialisation, so they are not
    independent; averaging within a seed first makes the test valid whatever their correlation
    (df = seeds − 1, not cells − blocks)."""
    if not diffs:
        return None
    seeds = [set(d) for d in diffs.values()]
    if any(s != seeds[0] for s in seeds):
        raise ValueError(f"blocks have different seeds: {[sorted(s) for s in seeds]}")
    return t_mean([float(np.mean([d[s] for d in diffs.values()])) for s in sorted(seeds[0])])


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment over the p-values that exist; None stays None.

    Written here rather than called from statsmodels (``multipletests(method="holm")``, the same
    arithmetic in the same order, so the same floats: tests/report/test_verdicts.py holds them
    equal) because statsmodels runs a full ``gc.collect()`` on every call, which costs 0.1–0.2 s
    once torch and the report's inputs are loaded: 4.3 of one report test's 4.3 s, and the page
    holds over a hundred families."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = list(pvalues)
    if idx:
        p = np.asarray([pvalues[i] for i in idx], dtype=float)
        order = np.argsort(p)
        stepped = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1))
        adjusted = np.empty_like(stepped)
        adjusted[order] = np.minimum(stepped, 1.0)
        for i, q in zip(idx, adjusted, strict=True):
            out[i] = float(q)
    return out


def ols_ci(x: np.ndarray, y: np.ndarray, level: float = 0.95,
           groups: Sequence[Any] | None = None) -> dict[str, Any]:
    """Least squares of y on the columns of x plus an intercept (statsmodels), with t-intervals.

    With ``groups`` the standard errors are cluster-robust (CR1) over the groups and the
    t reference has G − 1 degrees of freedom: encoders of one configuration (its seeds) share
    everything but the seed, so they are not independent observations. Returns ``coef``/``se``/
    ``ci_low``/``ci_high``/``p`` (one entry per column of x, intercept excluded), ``r2``, ``n``,
    ``dof`` and ``clusters``.
    """
    import statsmodels.api as sm

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"ols_ci: x must be (n, k) with n = len(y); got {x.shape} and {y.shape}")
    n, k = x.shape
    dof = n - k - 1
    if dof < 1:
        raise ValueError(f"ols_ci: {n} points cannot fit {k} slopes and an intercept")
    model = sm.OLS(y, sm.add_constant(x, has_constant="add"))
    clusters = None
    if groups is None:
        fit = model.fit()
    else:
        codes = np.unique(np.asarray(groups, dtype=str), return_inverse=True)[1]
        clusters = int(codes.max() + 1)
        if clusters < k + 2:
            raise ValueError(f"ols_ci: {clusters} clusters cannot give cluster-robust errors for "
                             f"{k} slopes")
        fit = model.fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
        dof = clusters - 1
    ci = np.asarray(fit.conf_int(alpha=1 - level))
    sst = float(((y - y.mean()) ** 2).sum())
    return {"coef": fit.params[1:].tolist(), "se": fit.bse[1:].tolist(),
            "ci_low": ci[1:, 0].tolist(), "ci_high": ci[1:, 1].tolist(),
            "p": fit.pvalues[1:].tolist(), "r2": float(fit.rsquared) if sst > 0 else None,
            "n": n, "dof": int(dof), "clusters": clusters}
