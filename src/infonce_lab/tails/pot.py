"""Peaks over threshold: the generalised Pareto fit of the upper tail of similarity scores
(SPECS B.8).

The fit is by profile likelihood, as in the WEINCE notebook: on a grid of shape values ξ, σ solves
the score equation, the best ξ is refined on a finer local grid. For fixed ξ > −1 the σ-score
equation g(σ) = (1 + ξ)·Σ y/(σ + ξy) − n is strictly decreasing on the admissible σ (σ + ξy > 0),
positive at the lower end and negative at infinity, so it has exactly one root; we find it for
all grid points at once by Newton steps safeguarded by bisection. For ξ ≤ −1 the GPD likelihood is
unbounded (σ → −ξ·max y), so no maximum-likelihood estimate exists there and those grid points are
excluded. scipy.stats.genpareto.fit is a generic optimiser that can stop at a local optimum near
the boundary; the tests check agreement where it converges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GPDFit:
    xi: float
    sigma: float
    loglik: float
    n: int


def _profile_sigma(y: np.ndarray, xi: np.ndarray, iters: int = 100, tol: float = 1e-12) -> np.ndarray:
    """σ̂(ξ) for every ξ in ``xi`` (all > −1), vectorised over the grid."""
    n, ymax = y.size, float(y.max())
    lo = np.where(xi < 0, -xi * ymax, 0.0) * (1 + 1e-12) + 1e-300
    hi = np.maximum(10.0 * ymax * (1.0 + np.abs(xi)), 10.0 * float(y.mean()))
    sigma = np.clip(float(y.mean()) * (1.0 + xi), lo * (1 + 1e-6) + 1e-12, hi)
    yy = y[None, :]
    for _ in range(iters):
        denom = sigma[:, None] + xi[:, None] * yy
        s1 = (yy / denom).sum(axis=1)
        s2 = (yy / denom**2).sum(axis=1)
        g = (1.0 + xi) * s1 - n
        lo = np.where(g > 0, sigma, lo)  # root lies above
        hi = np.where(g < 0, sigma, hi)
        step = g / ((1.0 + xi) * s2)  # Newton: σ − g/g', g' = −(1 + ξ)·s2
        new = sigma + step
        bad = ~np.isfinite(new) | (new <= lo) | (new >= hi)
        new = np.where(bad, 0.5 * (lo + hi), new)
        done = np.abs(new - sigma) <= tol * np.maximum(sigma, 1e-300)
        sigma = new
        if done.all():
            break
    return sigma


def gpd_loglik(y: np.ndarray, xi: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Log-likelihood of exceedances ``y`` under GPD(ξ, σ), vectorised over parameter pairs."""
    xi, sigma = np.atleast_1d(xi).astype(float), np.atleast_1d(sigma).astype(float)
    z = 1.0 + xi[:, None] * y[None, :] / sigma[:, None]
    ok = (z > 0).all(axis=1) & (sigma > 0)
    small = np.abs(xi) < 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        general = -y.size * np.log(sigma) - (1.0 + 1.0 / xi) * np.log(np.where(z > 0, z, 1)).sum(1)
        expo = -y.size * np.log(sigma) - y.sum() / sigma
    ll = np.where(small, expo, general)
    return np.where(ok, ll, -np.inf)


def fit_gpd(exceedances: np.ndarray, grid: int = 400, refine: int = 400,
            xi_range: tuple[float, float] = (-1.5, 1.0)) -> dict[str, float]:
    """Profile-likelihood MLE of the GPD shape ξ and scale σ: {"xi", "sigma", "loglik", "n"}."""
    y = np.asarray(exceedances, dtype=np.float64).ravel()
    if y.size < 10:
        raise ValueError(f"need at least 10 exceedances to fit a GPD, got {y.size}")
    if (y < 0).any():
        raise ValueError("exceedances must be non-negative (scores minus the threshold)")
    fit = _grid_fit(y, np.linspace(*xi_range, grid))
    step = (xi_range[1] - xi_range[0]) / (grid - 1)
    local = np.linspace(max(fit.xi - 2 * step, -1 + 1e-9), fit.xi + 2 * step, refine)
    fine = _grid_fit(y, local)
    best = fine if fine.loglik >= fit.loglik else fit
    return {"xi": best.xi, "sigma": best.sigma, "loglik": best.loglik, "n": int(y.size)}


def _grid_fit(y: np.ndarray, xi: np.ndarray) -> GPDFit:
    xi = xi[xi > -1.0]
    xi = np.where(np.abs(xi) < 1e-9, 1e-9, xi)  # ξ = 0 is the exponential limit; keep it smooth
    sigma = _profile_sigma(y, xi)
    ll = gpd_loglik(y, xi, sigma)
    i = int(np.argmax(ll))
    return GPDFit(xi=float(xi[i]), sigma=float(sigma[i]), loglik=float(ll[i]), n=int(y.size))


def exceedances(scores: np.ndarray, q: float) -> tuple[float, np.ndarray]:
    """Threshold u at the empirical q-quantile and the exceedances s − u for s > u."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    u = float(np.quantile(s, q))
    return u, s[s > u] - u


def endpoint(u: float, xi: float, sigma: float) -> float | None:
    """The finite right endpoint u − σ/ξ of a Weibull-type tail (ξ < 0); None otherwise."""
    return u - sigma / xi if xi < 0 else None


def xi_stability(scores: np.ndarray, qs: tuple[float, ...] = (0.98, 0.985, 0.99, 0.992, 0.995),
                 min_exceedances: int = 100, **fit_kw: int) -> list[dict[str, float]]:
    """ξ̂ across thresholds (a stable ξ̂ supports the GPD approximation)."""
    out = []
    for q in qs:
        u, y = exceedances(scores, q)
        if y.size >= min_exceedances:
            out.append({"q": q, "u": u, **fit_gpd(y, **fit_kw)})
    return out


def bootstrap_xi(y: np.ndarray, replicates: int = 200, seed: int = 0, level: float = 0.95,
                 grid: int = 120, refine: int = 60) -> tuple[float, float]:
    """Percentile bootstrap interval for ξ̂ (resampling exceedances; coarser grids for speed)."""
    rng = np.random.default_rng(seed)
    y = np.asarray(y, dtype=np.float64)
    xis = [fit_gpd(rng.choice(y, size=y.size, replace=True), grid=grid, refine=refine)["xi"]
           for _ in range(replicates)]
    a = (1.0 - level) / 2.0
    return float(np.quantile(xis, a)), float(np.quantile(xis, 1.0 - a))


def qq_points(y: np.ndarray, xi: float, sigma: float, probs: np.ndarray | None = None) -> dict[str, list[float]]:
    """Empirical against GPD quantiles at ``probs`` (default 0.01…0.99, 99 points)."""
    p = np.linspace(0.01, 0.99, 99) if probs is None else np.asarray(probs)
    exponential = abs(xi) < 1e-9
    theo = -sigma * np.log1p(-p) if exponential else sigma / xi * ((1.0 - p) ** (-xi) - 1.0)
    return {"p": p.tolist(), "empirical": np.quantile(y, p).tolist(), "gpd": np.asarray(theo).tolist()}
