from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from infonce_lab.tails.allocation import (
    gradient_allocation,
    softmax_negative_grads,
    weibit_negative_grads,
)
from infonce_lab.tails.noise_floor import noise_floor


def test_gradient_formulas_match_autograd():
    rng = np.random.default_rng(0)
    s_pos = rng.uniform(0.3, 0.95, size=6)
    s_neg = rng.uniform(-0.5, 0.99, size=(6, 9))
    for fn, logit, arg in ((softmax_negative_grads, lambda s: s / 0.3, 0.3),
                           (weibit_negative_grads, lambda s: -2.5 * torch.log1p(-s), 2.5)):
        s = torch.tensor(np.concatenate([s_pos[:, None], s_neg], 1), requires_grad=True)
        loss = F.cross_entropy(logit(s), torch.zeros(6, dtype=torch.long), reduction="sum")
        (grad,) = torch.autograd.grad(loss, s)
        np.testing.assert_allclose(fn(s_pos, s_neg, arg), grad[:, 1:].numpy(), rtol=1e-10)


def test_allocation_weibit_concentrates_near_the_cap():
    rng = np.random.default_rng(1)
    bank = np.clip(rng.normal(0.1, 0.25, size=(40, 600)), -1, 0.999)
    s_pos = rng.uniform(0.6, 0.95, size=40)
    out = gradient_allocation(s_pos, bank, k=128, subsets=10, tau=0.5, beta=4.0)
    centers = 0.5 * (np.array(out["bin_edges"][1:]) + np.array(out["bin_edges"][:-1]))
    mean_sm = float(np.dot(centers, out["softmax_grad"]))
    mean_w = float(np.dot(centers, out["weibit_grad"]))
    assert sum(out["softmax_grad"]) == pytest.approx(1.0) and sum(out["weibit_grad"]) == pytest.approx(1.0)
    assert mean_w > mean_sm  # Weibit puts its gradient mass on harder negatives
    if out["failure_rate"] > 0:
        assert float(np.dot(centers, out["risk"])) > mean_sm  # failures sit in the top bins
    with pytest.raises(ValueError, match="exceeds the bank"):
        gradient_allocation(s_pos, bank, k=601)


def test_noise_floor_follows_its_theory_lines():
    out = noise_floor(ns=(200, 2000, 10000), replicates=3000, seed=3)
    w, sm, th = np.array(out["mse_weibit"]), np.array(out["mse_softmax"]), np.array(out["theory_weibit"])
    assert np.all(np.abs(w / th - 1) < 0.25)  # consistent estimator: MSE ≈ c/n
    assert sm[-1] == pytest.approx(out["softmax_floor"], rel=0.25)  # biased: a floor
    assert sm[-1] > 3 * w[-1]
