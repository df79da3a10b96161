"""POT/GPD against known truth and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from infonce_lab.tails import bootstrap_xi, endpoint, exceedances, fit_gpd, gpd_loglik, qq_points


@pytest.mark.parametrize("xi", [-0.4, -0.2, 0.0])
def test_recovers_shape_at_n_20000(xi):
    y = stats.genpareto.rvs(c=xi, scale=0.05, size=20_000, random_state=np.random.default_rng(7))
    fit = fit_gpd(y)
    assert fit["xi"] == pytest.approx(xi, abs=0.05)
    assert fit["sigma"] == pytest.approx(0.05, rel=0.1)
    assert fit["n"] == 20_000


def test_is_the_maximum_likelihood_and_agrees_with_scipy():
    y = stats.genpareto.rvs(c=-0.3, scale=0.1, size=3000, random_state=np.random.default_rng(1))
    ours = fit_gpd(y)
    c, _, scale = stats.genpareto.fit(y, floc=0)
    ll_ours = gpd_loglik(y, np.array([ours["xi"]]), np.array([ours["sigma"]]))[0]
    ll_scipy = stats.genpareto.logpdf(y, c, loc=0, scale=scale).sum()
    assert ll_ours == pytest.approx(ours["loglik"])
    assert ll_ours >= ll_scipy - 1e-6  # never worse than scipy's optimum
    assert ours["xi"] == pytest.approx(c, abs=0.01)
    assert ll_ours == pytest.approx(float(stats.genpareto.logpdf(y, ours["xi"], scale=ours["sigma"]).sum()))


def test_profile_sigma_solves_the_score_equation():
    from infonce_lab.tails.pot import profile_sigma

    y = stats.genpareto.rvs(c=0.2, scale=1.0, size=500, random_state=np.random.default_rng(2))
    xi = np.array([-0.9, -0.5, 0.0 + 1e-9, 0.3, 0.9])
    sigma = profile_sigma(y, xi)
    g = (1 + xi) * (y[None] / (sigma[:, None] + xi[:, None] * y[None])).sum(1) - y.size
    assert np.allclose(g / y.size, 0, atol=1e-8)
    # and it maximises the likelihood in σ
    for x, s in zip(xi, sigma, strict=True):
        ll = gpd_loglik(y, np.full(3, x), np.array([0.99 * s, s, 1.01 * s]))
        assert ll[1] >= ll[0] and ll[1] >= ll[2]


def test_endpoint_threshold_and_qq():
    rng = np.random.default_rng(3)
    scores = rng.uniform(-1, 1, 100_000) ** 3  # bounded by 1
    u, y = exceedances(scores, 0.99)
    assert u == pytest.approx(np.quantile(scores, 0.99)) and (y > 0).all() and y.size == 1000
    fit = fit_gpd(y)
    assert fit["xi"] < 0
    assert endpoint(u, fit["xi"], fit["sigma"]) == pytest.approx(1.0, abs=0.02)
    assert endpoint(u, 0.1, 1.0) is None
    qq = qq_points(y, fit["xi"], fit["sigma"])
    assert np.corrcoef(qq["empirical"], qq["gpd"])[0, 1] > 0.99


def test_bootstrap_interval_has_the_asymptotic_width():
    """Around the full-sample estimate, about as wide as ±1.96·(1 + ξ)/√n (the MLE's asymptotic
    standard error for ξ > −1/2)."""
    xi, n = -0.2, 4000
    y = stats.genpareto.rvs(c=xi, scale=0.05, size=n, random_state=np.random.default_rng(4))
    lo, hi = bootstrap_xi(y, replicates=100, seed=1)
    assert lo < fit_gpd(y)["xi"] < hi
    expected = 2 * 1.96 * (1 + xi) / np.sqrt(n)
    assert 0.6 * expected < hi - lo < 1.6 * expected


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="at least 10"):
        fit_gpd(np.ones(5))
    with pytest.raises(ValueError, match="non-negative"):
        fit_gpd(np.r_[np.ones(20), -1.0])


@pytest.mark.parametrize("xi", [-0.9, -0.45, 0.3])
def test_reaches_the_maximum_of_the_xi_grid_profile(xi):
    """The θ-profile route lands on (or above) the best point of a fine ξ-grid profile built the
    notebook's way (σ̂(ξ) by Newton on the score equation)."""
    from infonce_lab.tails.pot import profile_sigma

    y = stats.genpareto.rvs(c=xi, scale=0.05, size=2000, random_state=np.random.default_rng(8))
    grid = np.linspace(-0.999, 1.0, 2000)
    ll = gpd_loglik(y, grid, profile_sigma(y, grid))
    fit = fit_gpd(y)
    assert fit["loglik"] >= ll.max() - 1e-6
    assert fit["xi"] == pytest.approx(grid[np.argmax(ll)], abs=2e-3)


# ------------------------------------------------------------- weighted fits, cluster bootstrap
def test_weighted_fits_equal_fits_on_the_replicated_data():
    """Frequency weights are multiplicities: the vectorised weighted fit, the weighted
    ``fit_gpd`` and ``fit_gpd`` on the data with every point repeated its weight's times meet."""
    from infonce_lab.tails import fit_gpd_weighted

    rng = np.random.default_rng(11)
    for xi in (-0.5, -0.2, 0.2):
        y = stats.genpareto.rvs(c=xi, scale=0.05, size=1500, random_state=rng)
        w = rng.poisson(1.0, size=(6, y.size)).astype(float)
        fits = fit_gpd_weighted(y, w)
        for i in range(6):
            ref = fit_gpd(np.repeat(y, w[i].astype(int)))
            assert fits["xi"][i] == pytest.approx(ref["xi"], abs=2e-4)
            assert fits["sigma"][i] == pytest.approx(ref["sigma"], rel=2e-3)
            assert fit_gpd(y, weights=w[i])["xi"] == pytest.approx(ref["xi"], abs=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        fit_gpd_weighted(y, -np.ones((1, y.size)))


def test_cluster_weights_are_image_multiplicities():
    from infonce_lab.tails import cluster_weights

    a = np.array([0, 0, 1, 2, 5])
    b = np.array([1, 2, 2, 5, 0])
    w = cluster_weights(a, b, replicates=50, seed=0)
    assert w.shape == (50, 5)
    # reconstruct each replicate's image multiplicities from the single-membership weights
    single = cluster_weights(np.array([0, 1, 2, 5]), None, replicates=50, seed=0)
    assert np.allclose(single.sum(axis=1), 4)  # n clusters drawn with replacement
    m = dict(zip([0, 1, 2, 5], single.T, strict=True))
    for j in range(5):
        assert np.array_equal(w[:, j], m[a[j]] * m[b[j]])


def test_cluster_bootstrap_sees_duplicated_clusters_that_the_iid_bootstrap_does_not():
    """Known answer: every exceedance repeated 8 times inside its own cluster carries the
    information of one, so the image bootstrap's interval matches the one of the deduplicated
    data, while resampling exceedances as independent shrinks it by about √8."""
    from infonce_lab.tails import cluster_bootstrap

    rng = np.random.default_rng(5)
    y = stats.genpareto.rvs(c=-0.3, scale=0.05, size=600, random_state=rng)
    ids = np.arange(y.size)
    dup = np.repeat(y, 8)
    dup_ids = np.repeat(ids, 8)
    base = cluster_bootstrap(y, 0.9, ids, ids, replicates=150, seed=1)  # (a, a): m² per point
    lone = cluster_bootstrap(y, 0.9, ids, ids + 10_000, replicates=150, seed=1)
    clustered = cluster_bootstrap(dup, 0.9, dup_ids, dup_ids + 10_000, replicates=150, seed=1)
    width = lambda r: r["xi_ci_high"] - r["xi_ci_low"]  # noqa: E731
    assert width(clustered) == pytest.approx(width(lone), rel=0.35)
    iid_lo, iid_hi = bootstrap_xi(dup, replicates=150, seed=1)
    assert iid_hi - iid_lo < 0.6 * width(clustered)
    assert base["clusters"] == 600 and clustered["clusters"] == 1200
    for r in (lone, clustered):
        assert r["xi_ci_low"] < -0.3 < r["xi_ci_high"]


def test_cluster_bootstrap_endpoint_interval_covers_a_known_endpoint():
    from infonce_lab.tails import cluster_bootstrap

    xi, sigma, u = -0.4, 0.04, 0.9  # x_F = u + σ/|ξ| = 1.0
    rng = np.random.default_rng(9)
    y = stats.genpareto.rvs(c=xi, scale=sigma, size=4000, random_state=rng)
    img = rng.integers(0, 3000, size=(2, y.size))
    r = cluster_bootstrap(y, u, img[0], img[1], replicates=150, seed=2)
    assert r["endpoint_ci_low"] < 1.0 < r["endpoint_ci_high"]
    assert r["endpoint_unbounded"] == 0.0 and r["endpoint_se"] > 0
    assert r["endpoint_ci_high"] - r["endpoint_ci_low"] < 0.05


# ------------------------------------------------------- the GPD against its ξ = 0 special case
def _brute_force_lr(y: np.ndarray) -> tuple[float, float, float]:
    """(LR, ℓ_GPD, ℓ_exp) from the two log-likelihoods written out here, each maximised by scipy's
    generic optimisers (Nelder–Mead from several starts for the GPD, bounded Brent for σ₀)."""
    from scipy.optimize import minimize, minimize_scalar

    n = y.size

    def nll_gpd(p: np.ndarray) -> float:
        xi, sigma = p[0], np.exp(p[1])
        if abs(xi) < 1e-12:
            return n * np.log(sigma) + y.sum() / sigma
        z = 1.0 + xi * y / sigma
        if (z <= 0).any():
            return np.inf  # outside the GPD's support: zero likelihood
        return n * np.log(sigma) + (1.0 + 1.0 / xi) * np.log(z).sum()

    def nll_exp(log_sigma: float) -> float:
        sigma = np.exp(log_sigma)
        return n * np.log(sigma) + y.sum() / sigma

    with np.errstate(invalid="ignore"):  # a simplex with two vertices outside the support: ∞ − ∞
        best = min((minimize(nll_gpd, [x0, np.log(y.mean() * (1 - x0))], method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-10, "maxiter": 20_000})
                    for x0 in (-0.6, -0.3, -0.05, 0.1, 0.3)), key=lambda r: r.fun)
    m = np.log(y.mean())
    exp = minimize_scalar(nll_exp, bounds=(m - 3, m + 3), method="bounded",
                          options={"xatol": 1e-12})
    return 2.0 * (exp.fun - best.fun), -best.fun, -exp.fun


@pytest.mark.parametrize(("xi", "seed"), [(-0.45, 21), (-0.3, 22), (0.0, 23), (0.2, 24)])
def test_exponential_lrt_is_the_brute_force_likelihood_ratio(xi, seed):
    from infonce_lab.tails import exponential_lrt

    y = stats.genpareto.rvs(c=xi, scale=0.05, size=2000, random_state=np.random.default_rng(seed))
    ours = exponential_lrt(y)
    lr, ll_gpd, ll_exp = _brute_force_lr(y)
    assert ours["exp_sigma"] == pytest.approx(y.mean())
    assert ours["exp_loglik"] == pytest.approx(ll_exp, abs=1e-6)
    assert ours["exp_loglik"] == pytest.approx(stats.expon.logpdf(y, scale=y.mean()).sum())
    # the profile MLE is the maximum: never below the generic optimiser, and at it
    assert ours["gpd_loglik"] >= ll_gpd - 1e-6
    assert ours["lrt_exp"] == pytest.approx(lr, abs=1e-3)
    assert ours["lrt_exp_p"] == pytest.approx(stats.chi2.sf(ours["lrt_exp"], 1))
    assert ours["aic_exp"] - ours["aic_gpd"] == pytest.approx(ours["delta_aic_exp"])
    assert ours["delta_aic_exp"] == pytest.approx(ours["lrt_exp"] - 2.0)
    assert ours["lrt_exp_adjusted"] is None and ours["lrt_exp_adjusted_p"] is None
    if xi == 0.0:  # the null holds: a χ²₁-sized statistic
        assert ours["lrt_exp"] < 10 and ours["lrt_exp_p"] > 0.001
    elif xi == -0.3:  # 2000 exceedances of a ξ = −0.3 tail: the exponential is far off
        assert ours["lrt_exp"] > 50


def test_exponential_lrt_is_never_negative_and_divides_by_the_design_effect():
    from infonce_lab.tails import exponential_lrt

    y = stats.expon.rvs(scale=0.05, size=500, random_state=np.random.default_rng(25))
    fit = fit_gpd(y)
    # a fit reported a hair below the exponential's likelihood (round-off): LR 0, not negative
    below = exponential_lrt(y, {**fit, "loglik": -500 * np.log(y.mean()) - 500 - 1e-9})
    assert below["lrt_exp"] == 0.0 and below["lrt_exp_p"] == 1.0
    full = exponential_lrt(y, fit, design_effect=2.5)
    assert full["lrt_exp_deff"] == 2.5
    assert full["lrt_exp_adjusted"] == pytest.approx(full["lrt_exp"] / 2.5)
    assert full["lrt_exp_adjusted_p"] == pytest.approx(stats.chi2.sf(full["lrt_exp"] / 2.5, 1))
    with pytest.raises(ValueError, match="at least 1"):
        exponential_lrt(y, fit, design_effect=0.5)


def test_design_effect_is_one_for_independent_pairs_and_large_for_duplicated_ones():
    """Independent exceedances on random pairs of 1,200 images: the pigeonhole bootstrap's
    variance is ≈ 3 times the independent one's (its product weights), so the design effect
    v_cluster/v_iid − 2 is ≈ 1. Every exceedance repeated 8 times in its own pair of images: at
    least the 8 the repeats carry (the rule counts a pair repeated as a whole conservatively)."""
    from infonce_lab.tails import cluster_bootstrap, iid_xi_se, xi_design_effect

    rng = np.random.default_rng(26)
    y = stats.genpareto.rvs(c=-0.3, scale=0.05, size=3000, random_state=rng)
    a, b = rng.integers(0, 1200, y.size), rng.integers(0, 1200, y.size)
    cluster = cluster_bootstrap(y, 0.9, a, b, replicates=200, seed=1)["xi_se"]
    iid = iid_xi_se(y, replicates=200, seed=2)
    assert iid == pytest.approx(0.7 / np.sqrt(y.size), rel=0.3)  # (1 + ξ)/√n
    assert 2.0 < (cluster / iid) ** 2 < 4.5
    assert 1.0 <= xi_design_effect(cluster, iid) < 2.5
    dup, ids = np.repeat(y[:600], 8), np.repeat(np.arange(600), 8)
    cluster = cluster_bootstrap(dup, 0.9, ids, ids + 10_000, replicates=200, seed=1)["xi_se"]
    assert xi_design_effect(cluster, iid_xi_se(dup, replicates=200, seed=2)) >= 8
    assert xi_design_effect(0.01, 0.02) == 1.0  # floored: never below independence
    with pytest.raises(ValueError, match="finite"):
        xi_design_effect(0.01, 0.0)
