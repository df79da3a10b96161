"""Peaks over threshold: the generalised Pareto fit of the upper tail of similarity scores
(WEINCE §2.3.1, Fig. 3).

The fit is the exact profile-likelihood MLE, reached through Grimshaw's (1993) reduction rather
than the WEINCE notebook's ξ-grid with a Newton solve for σ at every grid point. With θ = ξ/σ the
inner maximisation is closed-form, ξ(θ) = mean log(1 + θy), so the profile

    ℓ*(θ) = −n·log(ξ(θ)/θ) − n·(1 + ξ(θ))

costs one pass over the data per θ (the notebook's route needs a root-finding loop per grid
point: 7.8 s against ≈ 0.1 s at n = 20,000, which is what makes a bootstrap per checkpoint
affordable). The maximiser is the same point: a coarse grid over the θ-interval whose ξ(θ) spans
the admissible shape range (the profile can be multimodal, hence the grid), then a local grid
between the best point's neighbours. ξ(θ) increases with θ, so the ξ range maps to a θ interval
found by bisection. For ξ ≤ −1 the GPD likelihood is unbounded (σ → −ξ·max y), so no MLE exists
there and that part of the range is excluded. ``profile_sigma`` keeps the notebook's σ̂(ξ) as a
reference (the tests check both routes meet). scipy.stats.genpareto.fit is a generic optimiser
that can stop at a local optimum near the boundary; the diagnose stage reports its agreement.

The paper's "the Gumbel special case (ξ = 0) is a poor upper-tail fit" is a nested comparison:
:func:`exponential_lrt` gives the likelihood ratio of the GPD against its exponential member on
the same exceedances (χ²₁: ξ = 0 is interior), the AICs, and the statistic divided by the
clustering design effect of ξ̂ (:func:`xi_design_effect`: exceedances of pairs sharing an image
are not independent).
"""

from __future__ import annotations

import numpy as np


def _xi_of_theta(y: np.ndarray, theta: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """ξ(θ) = mean log(1 + θy) for every θ (θ = 0 gives 0, the exponential limit); with
    frequency weights ``w`` (all positive) the weighted mean."""
    with np.errstate(divide="ignore"):  # θ·y = −1 at the very end of the range gives −∞
        logs = np.log1p(np.multiply.outer(theta, y))
    return logs.mean(axis=-1) if w is None else logs @ w / w.sum()


def _profile_theta(y: np.ndarray, theta: np.ndarray, w: np.ndarray | None = None,
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(ℓ*(θ), ξ(θ)); at θ → 0 the profile tends to the exponential fit, −n·log ȳ − n (n: the
    total weight when weighted)."""
    n = y.size if w is None else float(w.sum())
    mean_y = y.mean() if w is None else float(w @ y) / n
    xi = _xi_of_theta(y, theta, w)
    small = np.abs(theta) < 1e-12
    safe = np.where(small, 1.0, theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(small, mean_y, xi / safe)  # σ = ξ/θ → ȳ as θ → 0
        ll = -n * np.log(ratio) - n * (1.0 + xi)
    return np.where(np.isfinite(ll) & (ratio > 0), ll, -np.inf), xi


def _u_for_xi(y: np.ndarray, targets: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              iters: int = 40, w: np.ndarray | None = None, ymax: float | None = None,
              ) -> np.ndarray:
    """u = log(1 + θ·max y) with ξ(θ(u)) = target, for every target at once (ξ increases in u)."""
    ymax = float(y.max()) if ymax is None else ymax
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        below = _xi_of_theta(y, np.expm1(mid) / ymax, w) < targets
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def profile_sigma(y: np.ndarray, xi: np.ndarray, iters: int = 200, tol: float = 1e-12) -> np.ndarray:
    """σ̂(ξ) for every ξ > −1 by the notebook's route: Newton on the σ-score equation
    g(σ) = (1 + ξ)·Σ y/(σ + ξy) − n (strictly decreasing on σ + ξy > 0, one root), safeguarded by
    bisection. A reference for tests and for plotting the profile in ξ; ``fit_gpd`` does not need it."""
    y = np.asarray(y, dtype=np.float64)
    xi = np.asarray(xi, dtype=np.float64)
    n, ymax = y.size, float(y.max())
    lo = np.where(xi < 0, -xi * ymax, 0.0) * (1 + 1e-12) + 1e-300
    hi = np.maximum(10.0 * ymax * (1.0 + np.abs(xi)), 10.0 * float(y.mean()))
    sigma = np.clip(float(y.mean()) * (1.0 - xi), lo * (1 + 1e-6) + 1e-12, hi)  # moments: σ = ȳ(1 − ξ)
    yy = y[None, :]
    for _ in range(iters):
        denom = sigma[:, None] + xi[:, None] * yy
        s1 = (yy / denom).sum(axis=1)
        s2 = (yy / denom**2).sum(axis=1)
        g = (1.0 + xi) * s1 - n
        lo = np.where(g > 0, sigma, lo)
        hi = np.where(g < 0, sigma, hi)
        new = sigma + g / ((1.0 + xi) * s2)
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
            xi_range: tuple[float, float] = (-1.0, 1.0), polish: bool = True,
            bisection_iters: int = 40, weights: np.ndarray | None = None) -> dict[str, float]:
    """Profile-likelihood MLE of the GPD shape ξ and scale σ: {"xi", "sigma", "loglik", "n"}.

    The search runs over u = log(1 + θ·max y), which resolves the steep end θ → −1/max y:
    ``grid`` points span the u interval whose ξ covers ``xi_range`` (ξ > −1: below, the
    likelihood is unbounded), ``refine`` points span the best point's two neighbours, and
    Brent's method polishes the best of those between its neighbours (``polish``; the bootstrap
    skips it: its replicates need ξ̂ to ~1e-3, not to round-off). ``weights``: frequency
    weights (a bootstrap replicate); max y is then the largest exceedance of positive weight."""
    from scipy.optimize import minimize_scalar  # heavy import, only where used

    y = np.asarray(exceedances, dtype=np.float64).ravel()
    w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if y.size < 10:
        raise ValueError(f"need at least 10 exceedances to fit a GPD, got {y.size}")
    if (y < 0).any() or not np.isfinite(y).all():
        raise ValueError("exceedances must be finite and non-negative (scores minus the threshold)")
    if w is not None and (w.shape != y.shape or (w < 0).any() or w.sum() <= 0):
        raise ValueError("weights must be one non-negative weight per exceedance, not all zero")
    if not -1.0 <= xi_range[0] < xi_range[1]:
        raise ValueError(f"xi_range must satisfy -1 <= low < high, got {xi_range}")
    if w is not None:  # weight 0: not in this replicate (and possibly beyond its −1/θ)
        y, w = y[w > 0], w[w > 0]
    ymax = float(y.max())

    def profile(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _profile_theta(y, np.expm1(u) / ymax, w)

    # ξ(u) → −∞ only as u/n when u → −∞ (below u = −60, θ·max y + 1 < 1e-26: nothing left to
    # resolve), and ξ(u) → ∞ as u → ∞: bracket, then bisect.
    u_top = 1.0
    while _xi_of_theta(y, np.array([np.expm1(u_top) / ymax]), w)[0] < xi_range[1]:
        u_top *= 2.0
    u_lo, u_hi = _u_for_xi(y, np.array([max(xi_range[0], -1.0 + 1e-9), xi_range[1]]),
                           np.array([-60.0, 0.0]), np.array([0.0, u_top]), bisection_iters, w,
                           ymax)
    us = np.linspace(u_lo, u_hi, grid)
    ll, _ = profile(us)
    i = int(np.argmax(ll))
    us = np.linspace(us[max(i - 1, 0)], us[min(i + 1, grid - 1)], refine)
    ll, _ = profile(us)
    j = int(np.argmax(ll))
    u = float(us[j])
    if polish:
        bounds = (us[max(j - 1, 0)], us[min(j + 1, refine - 1)])
        best = minimize_scalar(lambda v: -profile(np.array([v]))[0][0], bounds=bounds,
                               method="bounded", options={"xatol": 1e-12})
        u = float(best.x) if -best.fun >= ll[j] else u
    ll_best, xi_best = profile(np.array([u]))
    theta = float(np.expm1(u) / ymax)
    xi = float(xi_best[0])
    mean_y = float(y.mean() if w is None else w @ y / w.sum())
    sigma = xi / theta if abs(theta) >= 1e-12 else mean_y
    return {"xi": xi, "sigma": sigma, "loglik": float(ll_best[0]), "n": int(y.size)}


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
                 grid: int = 50, refine: int = 30) -> tuple[float, float]:
    """Percentile bootstrap interval for ξ̂ resampling exceedances as if independent (coarser
    grids for speed). Kept as the reference the cluster bootstrap is compared with: exceedances
    of cosine pairs are not independent (they share images), see :func:`cluster_bootstrap`."""
    rng = np.random.default_rng(seed)
    y = np.asarray(y, dtype=np.float64)
    xis = [fit_gpd(rng.choice(y, size=y.size, replace=True), grid=grid, refine=refine,
                   polish=False, bisection_iters=25)["xi"] for _ in range(replicates)]
    a = (1.0 - level) / 2.0
    return float(np.quantile(xis, a)), float(np.quantile(xis, 1.0 - a))


def fit_gpd_weighted(y: np.ndarray, weights: np.ndarray, *, window: tuple[float, float] = (-25.0, 6.0),
                     grid: int = 125, golden: int = 14,
                     xi_range: tuple[float, float] = (-1.0, 1.0)) -> dict[str, np.ndarray]:
    """The profile-likelihood GPD MLE for many frequency weightings of one set of exceedances at
    once (the rows of ``weights``, e.g. bootstrap replicates): {"xi", "sigma", "theta",
    "edge"} per row.

    The search is :func:`fit_gpd`'s, in u = log(1 + θ·max y) with max y the largest exceedance
    of positive weight in that row (the boundary θ → −1/max y lies at u → −∞): a coarse grid
    of ``grid`` points over ``window`` (rows that share their largest exceedance share the
    grid, so its sums are one matrix product per group), then ``golden`` golden-section steps
    between the best grid point's neighbours, all rows at once (0.618^14 of a 0.5-wide bracket:
    u to 6e-4, ξ to ~1e-4 — well inside a bootstrap spread of ~1e-2). A row whose best grid
    point sits on the window's edge is refitted by :func:`fit_gpd` (``edge`` marks it):
    bisection-bracketed, exact, slower. ξ outside ``xi_range`` is excluded (below −1 the
    likelihood is unbounded, as in fit_gpd)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.shape[1] != y.size:
        raise ValueError(f"weights must be (replicates, {y.size}); got {w.shape}")
    if (w < 0).any() or (w.sum(axis=1) <= 0).any():
        raise ValueError("weights must be non-negative with a positive total in every row")
    b = w.shape[0]
    order = np.argsort(-y)
    first = np.argmax(w[:, order] > 0, axis=1)  # each row's largest exceedance of weight > 0
    ymax = y[order][first]
    big_w = w.sum(axis=1)
    us = np.linspace(window[0], window[1], grid)
    ll = np.empty((b, grid))
    for m in np.unique(ymax):  # one coarse grid per largest exceedance: a matrix product
        rows = np.flatnonzero(ymax == m)
        theta = np.expm1(us) / m
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log1p(np.multiply.outer(theta, y))  # (G, n)
        logs[:, y > m] = 0.0  # weight 0 in every row of the group
        xi = (w[rows] @ logs.T) / big_w[rows, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = xi / theta[None, :]
            v = -big_w[rows, None] * np.log(ratio) - big_w[rows, None] * (1.0 + xi)
        ok = np.isfinite(v) & (ratio > 0) & (xi > xi_range[0]) & (xi <= xi_range[1])
        ll[rows] = np.where(ok, v, -np.inf)
    best = np.argmax(ll, axis=1)
    edge = (best == 0) | (best == grid - 1) | ~np.isfinite(ll[np.arange(b), best])
    lo = us[np.maximum(best - 1, 0)]
    hi = us[np.minimum(best + 1, grid - 1)]

    def profile(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ℓ*(u_b) and ξ(u_b), one u per row."""
        theta = np.expm1(u) / ymax
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log1p(theta[:, None] * y[None, :])
            logs[~np.isfinite(logs)] = 0.0  # only beyond a row's max y, where its weight is 0
            xi = np.einsum("bn,bn->b", logs, w) / big_w
            v = -big_w * np.log(xi / theta) - big_w * (1.0 + xi)
        ok = np.isfinite(v) & (xi / theta > 0) & (xi > xi_range[0]) & (xi <= xi_range[1])
        return np.where(ok, v, -np.inf), xi

    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    c = hi - ratio * (hi - lo)
    d = lo + ratio * (hi - lo)
    fc, fd = profile(c)[0], profile(d)[0]
    for _ in range(golden):  # maximise: keep the side of the larger value
        left = fc >= fd
        hi = np.where(left, d, hi)
        lo = np.where(left, lo, c)
        new = np.where(left, hi - ratio * (hi - lo), lo + ratio * (hi - lo))
        fnew = profile(new)[0]
        c, d, fc, fd = (np.where(left, new, d), np.where(left, c, new),
                        np.where(left, fnew, fd), np.where(left, fc, fnew))
        # keep c < d
        swap = c > d
        c, d, fc, fd = (np.where(swap, d, c), np.where(swap, c, d), np.where(swap, fd, fc),
                        np.where(swap, fc, fd))
    u_best = np.where(fc >= fd, c, d)
    xi_best = profile(u_best)[1]
    theta = np.expm1(u_best) / ymax
    for i in np.flatnonzero(edge):
        fit = fit_gpd(y, weights=w[i], polish=False)
        xi_best[i] = fit["xi"]
        theta[i] = fit["xi"] / fit["sigma"] if fit["sigma"] else 0.0
    mean_y = (w @ y) / big_w
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma = np.where(np.abs(theta) >= 1e-12, xi_best / theta, mean_y)
    return {"xi": xi_best, "sigma": sigma, "theta": theta, "edge": edge}


def cluster_weights(cluster_a: np.ndarray, cluster_b: np.ndarray | None, replicates: int,
                    seed: int) -> np.ndarray:
    """(replicates, n) bootstrap weights of n observations that belong to clusters (images):
    every replicate draws the clusters with replacement (multinomial multiplicities m_c), and an
    observation weighs m of its cluster — or, for a pair of two images, the product m_a·m_b (the
    pigeonhole bootstrap of Owen 2007 for two-way data, valid for such dyadic U-statistics:
    Davezies, D'Haultfœuille & Guyonvarch 2021). A pair drawn twice is then counted as often as
    its two images were."""
    a = np.asarray(cluster_a)
    ids = np.unique(a if cluster_b is None else np.concatenate([a, np.asarray(cluster_b)]))
    rng = np.random.default_rng(seed)
    m = rng.multinomial(ids.size, np.full(ids.size, 1.0 / ids.size), size=replicates).astype(np.float64)
    wa = m[:, np.searchsorted(ids, a)]
    return wa if cluster_b is None else wa * m[:, np.searchsorted(ids, np.asarray(cluster_b))]


def cluster_bootstrap(y: np.ndarray, u: float, image_a: np.ndarray, image_b: np.ndarray,
                      replicates: int = 200, seed: int = 0, level: float = 0.95,
                      ) -> dict[str, float | int | None]:
    """Percentile intervals for ξ̂ and the endpoint x̂_F = u − σ̂/ξ̂ by the image bootstrap: the
    exceedances y are cosines of pairs of views (images ``image_a``, ``image_b``), and every
    pair sharing an image shares that image's augmentations and its place in the embedding,
    so exceedances cluster by image (a near-duplicate image contributes many). The threshold u
    stays fixed: POT inference is conditional on its threshold, a choice of the protocol.

    ``endpoint_unbounded``: the share of replicates with ξ̂* ≥ 0 (no finite endpoint); when it
    exceeds the interval's tail mass the endpoint's upper end is None (unbounded)."""
    w = cluster_weights(image_a, image_b, replicates, seed)
    keep = w.sum(axis=1) > 0
    fits = fit_gpd_weighted(y, w[keep])
    xi = fits["xi"]
    a = (1.0 - level) / 2.0
    with np.errstate(divide="ignore"):
        x_f = np.where(xi < 0, u - 1.0 / fits["theta"], np.inf)
    unbounded = float(np.mean(~np.isfinite(x_f)))
    lo_f = float(np.quantile(x_f, a)) if np.isfinite(np.quantile(x_f, a)) else None
    hi_q = np.quantile(x_f, 1.0 - a)
    finite = x_f[np.isfinite(x_f)]
    return {"xi_ci_low": float(np.quantile(xi, a)), "xi_ci_high": float(np.quantile(xi, 1.0 - a)),
            "xi_se": float(np.std(xi, ddof=1)),
            "endpoint_se": float(np.std(finite, ddof=1)) if unbounded == 0 else None,
            "endpoint_ci_low": lo_f, "endpoint_ci_high": float(hi_q) if np.isfinite(hi_q) else None,
            "endpoint_unbounded": unbounded, "replicates": int(keep.sum()),
            "clusters": int(np.unique(np.concatenate([image_a, image_b])).size),
            "edge_refits": int(fits["edge"].sum())}


def qq_points(y: np.ndarray, xi: float, sigma: float, probs: np.ndarray | None = None) -> dict[str, list[float]]:
    """Empirical against GPD quantiles at ``probs`` (default 0.01…0.99, 99 points)."""
    p = np.linspace(0.01, 0.99, 99) if probs is None else np.asarray(probs)
    exponential = abs(xi) < 1e-9
    theo = -sigma * np.log1p(-p) if exponential else sigma / xi * ((1.0 - p) ** (-xi) - 1.0)
    return {"p": p.tolist(), "empirical": np.quantile(y, p).tolist(), "gpd": np.asarray(theo).tolist()}


# ------------------------------------------------------------ the GPD against its ξ = 0 member
def exponential_lrt(exceedances: np.ndarray, gpd: dict[str, float] | None = None,
                    design_effect: float | None = None) -> dict[str, float | None]:
    """The GPD against its ξ = 0 special case, the exponential (the Gumbel domain), on the same
    exceedances (WEINCE §2.3.1, Fig. 3: "the Gumbel special case is a poor upper-tail fit").

    The exponential MLE is σ̂₀ = ȳ, ℓ_exp = −n·log ȳ − n. Its support [0, ∞) holds every
    exceedance, and so does the GPD's [0, −σ̂/ξ̂] at its MLE (a finite log-likelihood), so both
    log-likelihoods are sums over the same n points. ``gpd``: :func:`fit_gpd`'s result for these
    exceedances (fitted here if None); the exponential is the GPD at ξ = 0, which the profile
    MLE's range contains, so ℓ_GPD ≥ ℓ_exp and the statistic is floored at 0 against round-off.

    LR = 2·(ℓ_GPD − ℓ_exp) with its χ²₁ p-value: ξ = 0 is interior to the GPD's shape range, so
    the reference is the plain χ²₁ (no boundary mixture); it assumes independent exceedances.
    ``design_effect`` (≥ 1: :func:`xi_design_effect`) divides the statistic for dependent ones
    (a first-order Rao–Scott correction: under clustering LR ≈ deff·χ²₁), giving
    ``lrt_exp_adjusted`` and its χ²₁ p; None leaves them None. AIC = 2k − 2ℓ (k = 2 and 1);
    ``delta_aic_exp`` = AIC_exp − AIC_GPD = LR − 2, positive where the AIC prefers the GPD."""
    from scipy.stats import chi2  # heavy import, only where used

    y = np.asarray(exceedances, dtype=np.float64).ravel()
    fit = fit_gpd(y) if gpd is None else gpd
    n = y.size
    sigma0 = float(y.mean())
    ll_exp = float(-n * np.log(sigma0) - n)
    ll_gpd = max(float(fit["loglik"]), ll_exp)
    lr = 2.0 * (ll_gpd - ll_exp)
    out: dict[str, float | None] = {
        "exp_sigma": sigma0, "exp_loglik": ll_exp, "gpd_loglik": ll_gpd,
        "lrt_exp": lr, "lrt_exp_p": float(chi2.sf(lr, 1)),
        "aic_gpd": 4.0 - 2.0 * ll_gpd, "aic_exp": 2.0 - 2.0 * ll_exp, "delta_aic_exp": lr - 2.0,
        "lrt_exp_deff": None, "lrt_exp_adjusted": None, "lrt_exp_adjusted_p": None}
    if design_effect is not None:
        if not design_effect >= 1.0:
            raise ValueError(f"a design effect is at least 1, got {design_effect}")
        adjusted = lr / design_effect
        out.update(lrt_exp_deff=float(design_effect), lrt_exp_adjusted=adjusted,
                   lrt_exp_adjusted_p=float(chi2.sf(adjusted, 1)))
    return out


def iid_xi_se(y: np.ndarray, replicates: int = 200, seed: int = 0) -> float:
    """The bootstrap standard error of ξ̂ resampling exceedances as if independent (multinomial
    frequency weights through :func:`fit_gpd_weighted`, the cluster bootstrap's own fitter, so
    the two standard errors differ by the resampling unit only)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    rng = np.random.default_rng(seed)
    w = rng.multinomial(y.size, np.full(y.size, 1.0 / y.size), size=replicates).astype(np.float64)
    return float(np.std(fit_gpd_weighted(y, w)["xi"], ddof=1))


def xi_design_effect(cluster_se: float, iid_se: float) -> float:
    """The clustering design effect of ξ̂ from two bootstraps run by one fitter: the image-cluster
    (pigeonhole) bootstrap's variance :func:`cluster_bootstrap` and the independent one's
    (:func:`iid_xi_se`), deff = max(1, v_cluster/v_iid − 2).

    Why "− 2": linearised, a bootstrap variance is Σ_pq cov(w_p, w_q)·x_p·x_q over the
    exceedances' influences x. The pigeonhole weight of a pair is m_a·m_b (image multiplicities,
    mean 1, variance ≈ 1), so cov(w_p, w_p) ≈ 3 and cov(w_p, w_q) ≈ 1 for two pairs sharing one
    image: v_cluster ≈ 3·Σx² + Σ_shared x_p·x_q, v_iid ≈ Σx², while the dyadic-robust variance
    (Fafchamps & Gubert 2007) is Σx² + Σ_shared x_p·x_q. Their ratio to Σx² is the design effect:
    v_cluster/v_iid − 2. Independent exceedances give ≈ 1 (the bare ratio would be ≈ 3); two pairs
    sharing both images (a pair drawn in two batches) are counted with cov ≈ 3, not 1, which errs
    on the conservative side. Floored at 1: dependence between exceedances never makes the test
    more powerful than independence, a smaller value is resampling noise."""
    if not (iid_se > 0 and np.isfinite(iid_se) and np.isfinite(cluster_se)):
        raise ValueError(f"need finite standard errors, iid_se > 0; got {cluster_se}, {iid_se}")
    return max(1.0, float((cluster_se / iid_se) ** 2 - 2.0))
