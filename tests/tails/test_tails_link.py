"""The link test against known truth: winners drawn from H1 or H0 on realistic score rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infonce_lab.tails.link import PLACEMENTS, LinkFit, fit_link, link_test, log_probs


def score_bank(n_batches: int, per_batch: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosines between unit vectors in 16 dimensions, candidates at varied closeness to the
    anchor, so rows span easy negatives to near-duplicates (like a contrastive bank)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n_batches * per_batch, 1, 16))
    hard = rng.uniform(size=(a.shape[0], k, 1)) < 0.2  # a fifth of the candidates are hard
    alpha = np.where(hard, rng.uniform(1.0, 6.0, size=hard.shape), rng.uniform(0.0, 0.6, size=hard.shape))
    c = alpha * a + rng.normal(size=(a.shape[0], k, 16))
    a /= np.linalg.norm(a, axis=2, keepdims=True)
    c /= np.linalg.norm(c, axis=2, keepdims=True)
    s = (a * c).sum(2)
    return s, np.repeat(np.arange(n_batches), per_batch)


def draw_winners(s: np.ndarray, tau: float, lam: float, placement: str, seed: int) -> np.ndarray:
    g = -np.log1p(-np.minimum(s, 1 - 1e-6))
    logits = ((1 - lam) * s + lam * g) / tau if placement == "inside" else (1 - lam) * s / tau + lam * g
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    rng = np.random.default_rng(seed)
    return np.array([rng.choice(len(row), p=row) for row in p])


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_log_likelihood_matches_explicit_softmax(placement):
    s, _ = score_bank(1, 5, 7, 0)
    w = np.array([0, 3, 6, 2, 1])
    tau, lam = 0.3, 0.25
    weights = np.array([(1 - lam) / tau, lam / tau if placement == "inside" else lam])
    fit = LinkFit("weibull", placement, weights, loglik=0.0, start_spread=0.0)
    assert fit.tau == pytest.approx(tau) and fit.lambdas["g"] == pytest.approx(lam)
    ll = log_probs(s, w, fit)
    for i in range(5):
        t = [(1 - lam) * s[i, k] + lam * -math.log(1 - s[i, k]) for k in range(7)]
        logits = [v / tau for v in t] if placement == "inside" else [
            (1 - lam) * s[i, k] / tau + lam * -math.log(1 - s[i, k]) for k in range(7)]
        ref = logits[w[i]] - math.log(sum(math.exp(v) for v in logits))
        assert ll[i] == pytest.approx(ref, rel=1e-10)


def test_fit_is_the_maximum_and_starts_agree():
    """Concave in the natural weights: every start reaches the same optimum, and no nearby
    (τ, λ) does better."""
    s, _ = score_bank(4, 64, 63, seed=3)
    w = draw_winners(s, tau=0.2, lam=0.3, placement="inside", seed=4)
    fit = fit_link(s, w, "weibull", "inside")
    assert fit.start_spread < 1e-6
    best = log_probs(s, w, fit).sum()
    assert best == pytest.approx(fit.loglik, rel=1e-12)
    for dt, dl in ((1.02, 0), (0.98, 0), (1, 0.02), (1, -0.02)):
        lam = fit.lambdas["g"] + dl
        tau = fit.tau * dt
        other = LinkFit("weibull", "inside", np.array([(1 - lam) / tau, lam / tau]), 0.0, 0.0)
        assert log_probs(s, w, other).sum() < best


@pytest.mark.parametrize("placement,tau,tol", [("outside", 0.2, 0.05), ("inside", 0.5, 0.1)])
def test_recovers_lambda_under_h1(placement, tau, tol):
    """32 batches of 256 anchors with 255 candidates (held-in half for fitting). With 1/τ inside
    the blend, λ and τ trade off along a ridge and λ̂ is about twice as noisy across draws
    (0.36–0.46 over three draws here, against 0.41–0.43 outside), hence the wider tolerance."""
    s, batch = score_bank(32, 256, 255, seed=1)
    w = draw_winners(s, tau=tau, lam=0.4, placement=placement, seed=2)
    res = link_test(s, batch, winners=w, placement=placement, lrt_replicates=0, cv_folds=0,
                    bootstrap=500)
    assert res["lambda_hat"] == pytest.approx(0.4, abs=tol)
    assert res["delta_ci"][0] > 0
    assert res["t_pvalue"] < 0.01


def test_h0_gives_no_gain_and_calibrated_lrt():
    p_values, covers = [], []
    for rep in range(6):
        s, batch = score_bank(8, 64, 48, seed=10 + rep)
        w = draw_winners(s, tau=0.15, lam=0.0, placement="inside", seed=20 + rep)
        res = link_test(s, batch, winners=w, lrt_replicates=19, cv_folds=0, bootstrap=500, seed=rep)
        p_values.append(res["lrt_pvalue"])
        covers.append(res["delta_ci"][0] <= 0 <= res["delta_ci"][1] or res["delta_ci"][1] < 0)
    assert sum(covers) >= 5
    assert sum(p < 0.05 for p in p_values) <= 1  # not piled near 0
    assert np.mean(p_values) > 0.25


def test_input_checks():
    with pytest.raises(ValueError, match="one batch id per anchor"):
        link_test(np.zeros((4, 3)), np.zeros(5))
    with pytest.raises(ValueError, match="at least 4 batches"):
        link_test(np.zeros((6, 3)), np.array([0, 0, 1, 1, 2, 2]))


def test_newton_and_lbfgs_reach_the_same_maximum():
    s, _ = score_bank(4, 64, 63, seed=5)
    w = draw_winners(s, tau=0.3, lam=0.5, placement="outside", seed=6)
    for model in ("softmax", "weibull", "weibull_frechet", "weibit"):
        a = fit_link(s, w, model, "outside", optimizer="newton")
        b = fit_link(s, w, model, "outside", optimizer="lbfgs")
        assert a.loglik == pytest.approx(b.loglik, abs=1e-6)
        assert a.loglik >= b.loglik - 1e-9


def test_cluster_robust_lambda_se_matches_the_spread_over_independent_draws():
    """The sandwich se of λ̂ (batches as clusters) against the Monte-Carlo spread of λ̂ over
    independent draws of the winners on the same scores."""
    from infonce_lab.tails.link import lambda_cluster_se

    s, batch = score_bank(16, 32, 31, seed=21)
    lams, ses = [], []
    for rep in range(12):
        w = draw_winners(s, tau=0.2, lam=0.4, placement="outside", seed=100 + rep)
        fit = fit_link(s, w, "weibull", "outside")
        out = lambda_cluster_se(s, w, fit, batch)
        assert not out["boundary"] and out["df"] == 15
        lams.append(fit.lambdas["g"])
        ses.append(out["se"])
    assert np.mean(ses) == pytest.approx(np.std(lams, ddof=1), rel=0.4)


def test_lambda_se_is_none_on_the_boundary():
    from infonce_lab.tails.link import lambda_cluster_se

    s, batch = score_bank(8, 64, 48, seed=3)
    # a softmax truth: the first draw whose fit lands on λ = 0 (about half of them)
    for seed in range(20):
        w = draw_winners(s, tau=0.15, lam=0.0, placement="inside", seed=seed)
        fit = fit_link(s, w, "weibull", "inside")
        if fit.lambdas["g"] == 0.0:
            break
    else:
        pytest.fail("no boundary fit in 20 draws of a softmax truth")
    out = lambda_cluster_se(s, w, fit, batch)
    assert out["boundary"] and out["se"] is None


def test_link_test_reports_its_inference_and_the_lrt_floor():
    s, batch = score_bank(8, 64, 48, seed=12)
    w = draw_winners(s, tau=0.2, lam=0.4, placement="inside", seed=13)
    res = link_test(s, batch, winners=w, lrt_replicates=9, cv_folds=0, bootstrap=200)
    assert res["lrt_floor"] == pytest.approx(0.1) and res["lrt_pvalue"] >= res["lrt_floor"]
    means = np.array(list(res["delta_by_batch"].values()))
    assert len(means) == 4 and res["delta_df"] == 3
    assert res["delta_mean"] == pytest.approx(means.mean())
    assert res["delta_se"] == pytest.approx(means.std(ddof=1) / 2)
    from scipy import stats
    t = means.mean() / res["delta_se"]
    assert res["t_pvalue"] == pytest.approx(stats.t.sf(t, 3))
    assert res["lambda_se"] > 0 and not res["lambda_boundary"] and not res["delta_degenerate"]
