"""Estimates as the results files carry them (``{"value", "low", "high", "level", "n", "method",
"t"}``, read by :meth:`infonce_lab.report.verdicts.Estimate.from_dict`), and the few inferences
the population-geometry and large-batch simulations need on top of
:mod:`infonce_lab.evaluation.stats`: a trimmed mean with Yuen's standard error (robust to a few
collapsed seeds), a Welch–Satterthwaite combination of independent t-inferences (a difference of
two means, a mean over settings, a least-squares slope), a Monte-Carlo mean with a large-sample
standard error, and Wilson intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from infonce_lab.evaluation.stats import TInference, t_mean

LEVEL = 0.95
mean_t = t_mean  # t-inference on the mean of independent values (seeds, replicates, chains)


def from_t(t: TInference | None, method: str) -> dict[str, Any]:
    """A t-inference as a results-file estimate (its 95% interval and the inference itself, so the
    report can test it at any null value and Holm-adjust a family); None: fewer than two values."""
    if t is None:
        return missing("fewer than two values", method)
    lo, hi = t.interval(LEVEL)
    return {"value": t.mean, "low": lo, "high": hi, "level": LEVEL, "n": t.n, "method": method,
            "t": t.to_json()}


def interval(value: float, low: float, high: float, method: str, n: int | None = None,
             ) -> dict[str, Any]:
    """An estimate with an interval but no t-inference (a bootstrap, a Wilson interval)."""
    out: dict[str, Any] = {"value": float(value), "low": float(low), "high": float(high),
                           "level": LEVEL, "method": method}
    if n is not None:
        out["n"] = int(n)
    return out


def missing(why: str, method: str = "") -> dict[str, Any]:
    return {"value": None, "low": None, "high": None, "level": LEVEL, "method": method,
            "undefined": why}


def yuen(values: Sequence[float], trim: float) -> TInference | None:
    """The ``trim``-trimmed mean (⌊trim·n⌋ cut from each side) with Yuen's winsorised standard
    error, referred to t with h − 1 degrees of freedom, h = n − 2⌊trim·n⌋: Yuen's one-sample
    (or, on paired differences, paired) test. Nothing trimmed is the ordinary t-test.

    Why trimmed: a collapsed encoder's D_sym saturates at ≈ 2·log(n/1e-8) ≈ 50, one or two orders
    above every other seed (E.5(3)); a trimmed mean is not moved by a few such values, a mean is.
    """
    from scipy import stats
    from scipy.stats import mstats

    v = np.asarray(values, dtype=np.float64)
    n = v.size
    k = int(trim * n)
    h = n - 2 * k
    if h < 2:
        return None
    if k == 0:  # nothing trimmed (scipy's trimmed_stde fails on zero limits)
        return t_mean(v)
    mean = float(stats.trim_mean(v, trim))
    win = np.asarray(mstats.winsorize(v, limits=(k / n, k / n)), dtype=np.float64)
    # Yuen (1974): d = (n − 1)·s_w²/(h(h − 1)), as scipy's ttest_ind(trim=) has it per sample
    se = math.sqrt((n - 1) * float(win.var(ddof=1)) / (h * (h - 1)))
    return TInference(mean, se, h - 1, n)


def welch(parts: Sequence[TInference], weights: Sequence[float]) -> TInference | None:
    """Σ wₖ·Xₖ of independent t-inferences: se² = Σ wₖ²·seₖ², Welch–Satterthwaite degrees of
    freedom (floored to an integer, which only widens the interval). ``n`` is the smallest part's."""
    if not parts:
        return None
    var = [w * w * p.se * p.se for p, w in zip(parts, weights, strict=True)]
    total = sum(var)
    mean = sum(w * p.mean for p, w in zip(parts, weights, strict=True))
    if total == 0:
        return TInference(mean, 0.0, min(p.df for p in parts), min(p.n for p in parts))
    df = total**2 / sum(v * v / p.df for v, p in zip(var, parts, strict=True) if v > 0)
    return TInference(mean, math.sqrt(total), max(1, int(df)), min(p.n for p in parts))


def shifted(t: TInference, by: float) -> TInference:
    """t − by for a known constant (a closed form, a quadrature): the same standard error."""
    return replace(t, mean=t.mean - by)


def difference(a: TInference, b: TInference) -> TInference | None:
    """a − b for independent estimates (two seed sets, or a mean and a Monte-Carlo estimate)."""
    return welch([a, b], [1.0, -1.0])


def monte_carlo(mean: float, se: float, n_eff: float) -> TInference:
    """A Monte-Carlo estimate with a large-sample standard error; df = n_eff − 1 (the effective
    sample size of a self-normalised importance sampler, say)."""
    return TInference(float(mean), float(se), max(1, int(n_eff) - 1), max(1, int(n_eff)))


def wilson(k: int, n: int, method: str = "wilson") -> dict[str, Any]:
    """A proportion k/n with its Wilson 95% interval (scipy's ``binomtest``; statsmodels would
    cost its ~2 s import in a stage that needs nothing else of it)."""
    from scipy import stats

    if n == 0:
        return missing("no cases", method)
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=LEVEL, method="wilson")
    return interval(k / n, ci.low, ci.high, method, n)


def log_log_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y on log x (nan when some y ≤ 0: no power law to fit)."""
    y = np.asarray(y, np.float64)
    if np.any(y <= 0) or not np.all(np.isfinite(y)):
        return math.nan
    return float(np.polyfit(np.log(np.asarray(x, np.float64)), np.log(y), 1)[0])


def step_pair(step: dict[str, Any], half_step: dict[str, Any]) -> dict[str, Any]:
    """A verdict quantity of a particle experiment at its steps and at twice the steps, under the
    keys the report's ``converged(...)`` reads (``half_step`` is the doubled-steps run)."""
    return {"step": step, "half_step": half_step}
