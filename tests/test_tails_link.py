"""The link test against known truth: winners drawn from H1 or H0 on realistic score rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from infonce_lab.tails.link import link_test, log_likelihoods, shortfall


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
    st = torch.as_tensor(s)
    g = shortfall(st)
    if placement == "inside":
        logits = ((1 - lam) * st + lam * g) / tau
    else:
        logits = (1 - lam) * st / tau + lam * g
    gen = torch.Generator().manual_seed(seed)
    return torch.multinomial(torch.softmax(logits, 1), 1, generator=gen).squeeze(1).numpy()


def test_log_likelihood_matches_explicit_softmax():
    s, _ = score_bank(1, 5, 7, 0)
    w = np.array([0, 3, 6, 2, 1])
    st = torch.as_tensor(s)
    ll = log_likelihoods(st, shortfall(st), torch.as_tensor(w),
                         torch.tensor(math.log(0.3), dtype=torch.float64),
                         torch.tensor(math.log(0.25 / 0.75), dtype=torch.float64), "outside").numpy()
    for i in range(5):
        logits = [0.75 * s[i, k] / 0.3 + 0.25 * -math.log(1 - s[i, k]) for k in range(7)]
        ref = logits[w[i]] - math.log(sum(math.exp(v) for v in logits))
        assert ll[i] == pytest.approx(ref, rel=1e-10)


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
