"""The noise-floor illustration (WEINCE App. C.1, Fig. 5): estimating a top-vs-reference log-odds
from n observed winners when the true choice law is Weibit.

The Weibit MLE is consistent, so its mean squared error falls like c/n with c = x_gap²/Var_{p*}(x)
(the inverse Fisher information of β times the squared gap). The softmax MLE converges to the
KL pseudo-true θ that matches E_θ[s] = E_{p*}[s] (Thm C.1, White 1982); its implied log-odds is
biased, so its error stops at a floor (θ_pseudo·s_gap − truth)². Both estimators solve their
moment equation by bisection, vectorised over replicates.

Every MSE is a mean of ``replicates`` independent squared errors, so it carries a t-interval over
the replicates; the verdict quantities are the MSEs in units of their theory lines (n·MSE/c for
Weibit, MSE/floor for softmax), written as results-file estimates. A replicate whose winners all
sit on one extreme candidate has no MLE (the moment equation has no root); such replicates are
counted, and an MSE that includes them is undefined rather than a number from the bisection's
clip at ±100.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DEFAULT_SCORES = (0.15, 0.45, 0.70, 0.90)
LEVEL = 0.95


def _solve_moment(features: np.ndarray, targets: np.ndarray, lo: float = -100.0,
                  hi: float = 100.0, iters: int = 80) -> np.ndarray:
    """θ with E_θ[f] = target for p ∝ exp(θ·f), for every target at once (E_θ[f] increases in θ)."""
    lo_v = np.full(targets.shape, lo)
    hi_v = np.full(targets.shape, hi)
    for _ in range(iters):
        mid = 0.5 * (lo_v + hi_v)
        logits = mid[:, None] * features[None, :]
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        mean = p @ features
        below = mean < targets
        lo_v = np.where(below, mid, lo_v)
        hi_v = np.where(below, hi_v, mid)
    return 0.5 * (lo_v + hi_v)


def mean_estimate(values: np.ndarray, *, no_mle: int = 0) -> dict[str, Any]:
    """The mean of independent replicate values with its 95% t-interval, as a results-file
    estimate carrying its t-inference (``{"mean", "se", "df", "n"}``)."""
    from scipy import stats

    n = int(values.size)
    mean = float(values.mean())
    se = float(values.std(ddof=1) / math.sqrt(n))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df=n - 1)) * se
    out: dict[str, Any] = {"value": mean, "low": mean - half, "high": mean + half,
                           "level": LEVEL, "n": n, "method": "t over replicates",
                           "t": {"mean": mean, "se": se, "df": n - 1, "n": n}}
    if no_mle:
        out.update(value=None, low=None, high=None, t=None,
                   undefined=f"{no_mle} of {n} replicates have no MLE (all winners on one "
                             f"extreme candidate)")
    return out


def _no_mle(counts: np.ndarray, features: np.ndarray) -> int:
    """Replicates whose empirical mean of the feature is its smallest or largest value."""
    at_min = counts[:, features == features.min()].sum(1)
    at_max = counts[:, features == features.max()].sum(1)
    n = counts.sum(1)
    return int(((at_min == n) | (at_max == n)).sum())


def noise_floor(
    scores: tuple[float, ...] = DEFAULT_SCORES, beta: float = 0.8,
    ns: tuple[int, ...] = (100, 200, 500, 1000, 2000, 5000, 10000),
    replicates: int = 12000, seed: int = 20260113,
) -> dict[str, Any]:
    s = np.asarray(scores, dtype=np.float64)
    x = -np.log1p(-s)
    p_true = np.exp(beta * x - (beta * x).max())
    p_true /= p_true.sum()
    top, ref = int(np.argmax(s)), int(np.argmin(s))
    truth = beta * (x[top] - x[ref])
    x_gap, s_gap = x[top] - x[ref], s[top] - s[ref]
    var_x = float(p_true @ (x - p_true @ x) ** 2)
    c = float(x_gap**2 / var_x)
    theta_pseudo = float(_solve_moment(s, np.array([p_true @ s]))[0])
    floor = float((theta_pseudo * s_gap - truth) ** 2)
    rng = np.random.default_rng(seed)
    mse_w, mse_s, est_w, est_s, ratio_w, ratio_s = [], [], {}, {}, {}, {}
    for n in ns:
        counts = rng.multinomial(n, p_true, size=replicates)
        beta_hat = _solve_moment(x, counts @ x / n)
        theta_hat = _solve_moment(s, counts @ s / n)
        sq_w = (beta_hat * x_gap - truth) ** 2
        sq_s = (theta_hat * s_gap - truth) ** 2
        mse_w.append(float(sq_w.mean()))
        mse_s.append(float(sq_s.mean()))
        no_w, no_s = _no_mle(counts, x), _no_mle(counts, s)
        est_w[str(n)] = mean_estimate(sq_w, no_mle=no_w)
        est_s[str(n)] = mean_estimate(sq_s, no_mle=no_s)
        ratio_w[str(n)] = mean_estimate(sq_w * n / c, no_mle=no_w)
        ratio_s[str(n)] = (mean_estimate(sq_s / floor, no_mle=no_s) if floor > 0 else
                           {"value": None, "low": None, "high": None, "level": LEVEL,
                            "undefined": "the softmax is correctly specified here: no floor"})
    return {
        "n": list(ns),
        "mse_weibit": mse_w,
        "mse_softmax": mse_s,
        "theory_weibit": [c / n for n in ns],
        "softmax_floor": floor,
        "truth": float(truth),
        "theta_pseudo": theta_pseudo,
        "c": c,
        "estimates": {
            "mse_weibit": est_w,
            "mse_softmax": est_s,
            # the verdict quantities: each MSE in units of its theory line
            "weibit_n_mse_over_c": ratio_w,
            "softmax_mse_over_floor": ratio_s,
        },
    }
