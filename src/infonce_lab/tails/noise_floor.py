"""The noise-floor illustration (SPECS B.10): estimating a top-vs-reference log-odds from n
observed winners when the true choice law is Weibit.

The Weibit MLE is consistent, so its mean squared error falls like c/n with c = x_gap²/Var_{p*}(x)
(the inverse Fisher information of β times the squared gap). The softmax MLE converges to the
KL pseudo-true θ that matches E_θ[s] = E_{p*}[s]; its implied log-odds is biased, so its error
stops at a floor (θ_pseudo·s_gap − truth)². Both estimators solve their moment equation by
bisection, vectorised over replicates.
"""

from __future__ import annotations

import numpy as np

DEFAULT_SCORES = (0.15, 0.45, 0.70, 0.90)


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


def noise_floor(
    scores: tuple[float, ...] = DEFAULT_SCORES, beta: float = 0.8,
    ns: tuple[int, ...] = (100, 200, 500, 1000, 2000, 5000, 10000),
    replicates: int = 12000, seed: int = 20260113,
) -> dict[str, list[float] | float]:
    s = np.asarray(scores, dtype=np.float64)
    x = -np.log1p(-s)
    p_true = np.exp(beta * x - (beta * x).max())
    p_true /= p_true.sum()
    top, ref = int(np.argmax(s)), int(np.argmin(s))
    truth = beta * (x[top] - x[ref])
    x_gap, s_gap = x[top] - x[ref], s[top] - s[ref]
    var_x = float(p_true @ (x - p_true @ x) ** 2)
    theta_pseudo = float(_solve_moment(s, np.array([p_true @ s]))[0])
    rng = np.random.default_rng(seed)
    mse_w, mse_s = [], []
    for n in ns:
        counts = rng.multinomial(n, p_true, size=replicates)
        beta_hat = _solve_moment(x, counts @ x / n)
        theta_hat = _solve_moment(s, counts @ s / n)
        mse_w.append(float(np.mean((beta_hat * x_gap - truth) ** 2)))
        mse_s.append(float(np.mean((theta_hat * s_gap - truth) ** 2)))
    return {
        "n": list(ns),
        "mse_weibit": mse_w,
        "mse_softmax": mse_s,
        "theory_weibit": [float(x_gap**2 / var_x / n) for n in ns],
        "softmax_floor": float((theta_pseudo * s_gap - truth) ** 2),
        "truth": float(truth),
        "theta_pseudo": theta_pseudo,
    }
