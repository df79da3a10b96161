"""WEINCE against independent references: a slow per-anchor loop with scipy.stats.linregress,
the NT-Xent limit (λ ≡ 0) and the pure shortfall-logit limit (λ ≡ 1, β = 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from infonce_lab.losses import info_nce, weince
from infonce_lab.losses.common import pair_similarities
from infonce_lab.losses.weince import tail_fit, tail_size
from loss_knobs import info_nce_knobs, tail_fit_knobs, weince_knobs


def _views(n: int, d: int, seed: int, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, d, generator=g, dtype=dtype)
    return z1, z1 + 0.8 * torch.randn(n, d, generator=g, dtype=dtype)


def slow_reference(sim: np.ndarray, n: int, tau: float, frac=0.10, min_pts=32, q=0.2,
                   k_rho=10.0, k_aic=1.0, margin=2.0, eps=1e-6):
    """WEINCE App. E (as the released code computes it) read literally, one anchor at a time."""
    m = 2 * n
    k_neg = m - 2
    k = min(max(max(min_pts, round(frac * k_neg)), 10), k_neg)
    burn = max(1, k // 20)
    rho, dAIC, beta_hat = np.zeros(m), np.zeros(m), np.zeros(m)
    for i in range(m):
        p = (i + n) % m
        neg = np.array([sim[i, j] for j in range(m) if j not in (i, p)])
        delta = np.sort(np.maximum(1.0 - neg, eps))[:k]
        rho[i] = delta[0]
        f = np.arange(1, k + 1) / (k + 1)
        x, yw, yg = np.log(delta[burn:]), np.log(f[burn:]), np.log(-np.log(f[burn:]))
        nfit = len(x)
        fits = []
        for y in (yw, yg):
            if np.ptp(x) == 0:
                slope, sse = 0.0, float(((y - y.mean()) ** 2).sum())
            else:
                r = stats.linregress(x, y)
                slope = r.slope
                sse = float(((y - (r.intercept + r.slope * x)) ** 2).sum())
            fits.append((slope, max(sse, 1e-12)))
        (sw, ssew), (sg, sseg) = fits
        ssew += 1e6 if sw <= 0 else 0.0
        sseg += 1e6 if sg >= 0 else 0.0
        aic_w = nfit * math.log(ssew / nfit) + 4
        aic_g = nfit * math.log(sseg / nfit) + 4
        dAIC[i] = aic_g - aic_w
        beta_hat[i] = max(sw, 0.0)
    rho0 = np.sort(rho)[round(q * (m - 1))]
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    lam = np.array([sig(k_rho * (math.log(rho0) - math.log(rho[i]))) * sig(k_aic * (dAIC[i] - margin))
                    for i in range(m)])
    loss = 0.0
    for i in range(m):
        p = (i + n) % m
        logits = {j: (1 - lam[i]) * sim[i, j] / tau + lam[i] * (-math.log(1 - min(sim[i, j], 1 - eps)))
                  for j in range(m) if j != i}
        mx = max(logits.values())
        lse = mx + math.log(sum(math.exp(v - mx) for v in logits.values()))
        loss += lse - logits[p]
    return loss / m, lam, beta_hat, rho0, dAIC


@pytest.mark.parametrize("n,seed", [(40, 0), (64, 1), (8, 2)])
def test_matches_slow_loop_with_linregress(n, seed):
    z1, z2 = _views(n, 6, seed)
    loss, st = weince(z1, z2, 0.5, **weince_knobs())
    sim = pair_similarities(z1, z2)[0].numpy()
    ref_loss, lam, beta_hat, rho0, daic = slow_reference(sim, n, 0.5)
    assert float(loss) == pytest.approx(ref_loss, rel=1e-9)
    np.testing.assert_allclose(st["lambda"].numpy(), lam, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(st["beta_hat"].numpy(), beta_hat, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(st["delta_aic"].numpy(), daic, rtol=1e-7, atol=1e-6)
    assert float(st["rho0"]) == pytest.approx(rho0)
    assert st["lambda"].shape == (2 * n,) and st["beta_hat"].shape == (2 * n,)


def test_ties_and_scores_at_the_clamp():
    # Duplicated rows give cosines of exactly 1 (shortfall at the clamp) and tied tail values.
    n = 24
    base = torch.randn(6, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    z1 = base.repeat(4, 1)
    z2 = z1.clone()
    z2[::3] = -z2[::3]
    loss, st = weince(z1, z2, 0.3, **weince_knobs())
    sim = pair_similarities(z1, z2)[0].numpy()
    ref_loss, lam, beta_hat, _, _ = slow_reference(sim, n, 0.3)
    assert math.isfinite(float(loss))
    assert float(loss) == pytest.approx(ref_loss, rel=1e-9)
    np.testing.assert_allclose(st["lambda"].numpy(), lam, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(st["beta_hat"].numpy(), beta_hat, rtol=1e-7, atol=1e-9)


def test_lambda_zero_is_nt_xent():
    z1, z2 = _views(16, 8, 4)
    a, _ = weince(z1, z2, 0.2, **weince_knobs(lambda_mode="fixed", lambda_fixed=0.0))
    b, _ = info_nce(z1, z2, 0.2, **info_nce_knobs())
    assert float(a) == pytest.approx(float(b), rel=1e-12)


def test_lambda_one_is_cross_entropy_of_shortfall_logits():
    z1, z2 = _views(16, 8, 5)
    a, _ = weince(z1, z2, 0.2, **weince_knobs(lambda_mode="fixed", lambda_fixed=1.0, beta="one"))
    sim, pos = pair_similarities(z1, z2)
    logits = -torch.log(1 - sim.clamp(max=1 - 1e-6))
    logits.fill_diagonal_(float("-inf"))
    assert float(a) == pytest.approx(float(F.cross_entropy(logits, pos)), rel=1e-12)


def test_only_similarities_carry_gradient():
    """λ and β̂ are stop-gradient: the gradient equals that of the same logits with λ frozen."""
    z1, z2 = _views(12, 5, 6)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    loss, st = weince(z1, z2, 0.4, **weince_knobs(beta="per_anchor"))
    g1, g2 = torch.autograd.grad(loss, (z1, z2))
    lam, beta_i = st["lambda"], st["beta_hat"].clamp(0.5, 16.0)
    assert not lam.requires_grad and not st["beta_hat"].requires_grad
    y1, y2 = z1.detach().clone().requires_grad_(True), z2.detach().clone().requires_grad_(True)
    sim, pos = pair_similarities(y1, y2)
    logits = ((1 - lam) / 0.4)[:, None] * sim + (lam * beta_i)[:, None] * -torch.log1p(-sim.clamp(max=1 - 1e-6))
    logits = logits.masked_fill(torch.eye(24, dtype=torch.bool), float("-inf"))
    h1, h2 = torch.autograd.grad(F.cross_entropy(logits, pos), (y1, y2))
    assert torch.allclose(g1, h1, atol=1e-12) and torch.allclose(g2, h2, atol=1e-12)


@pytest.mark.parametrize("variant", [
    {"lambda_fixed": 0.3},
    {"lambda_fixed": 0.7, "weib_topm_weight": 0.5, "pl_topm_weight": 0.5, "top_m": 5},
])
def test_gradcheck_float64(variant):
    """With λ held fixed the loss is a smooth function of z and autograd must match finite
    differences. (With λ computed from the batch it is stop-gradient by design, so finite
    differences would see λ move; `test_only_similarities_carry_gradient` covers that case.)"""
    variant = {"lambda_mode": "fixed", **variant}
    z1, z2 = _views(6, 3, 7)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: weince(a, b, 0.5, **weince_knobs(**variant))[0], (z1, z2))


def test_variants_select_their_factor():
    z1, z2 = _views(32, 8, 8)
    prod = weince(z1, z2, 0.5, **weince_knobs())[1]["lambda"]
    rho = weince(z1, z2, 0.5, **weince_knobs(lambda_mode="rho"))[1]["lambda"]
    aic = weince(z1, z2, 0.5, **weince_knobs(lambda_mode="aic"))[1]["lambda"]
    assert torch.allclose(prod, rho * aic)


def test_recipe_terms_add_the_documented_cross_entropies():
    z1, z2 = _views(20, 6, 9)
    base, _ = weince(z1, z2, 0.5, **weince_knobs())
    full, _ = weince(z1, z2, 0.5, **weince_knobs(weib_topm_weight=0.5, pl_topm_weight=0.25, top_m=7, beta_t=3.0))
    sim, pos = pair_similarities(z1, z2)
    m = sim.shape[0]
    extra_w = extra_p = 0.0
    for i in range(m):
        negs = [j for j in range(m) if j not in (i, int(pos[i]))]
        hard = sorted(negs, key=lambda j: -float(sim[i, j]))[:7]
        s = torch.stack([sim[i, pos[i]]] + [sim[i, j] for j in hard])
        extra_w += float(-F.log_softmax(-3.0 * torch.log1p(-s.clamp(max=1 - 1e-6)), 0)[0])
        extra_p += float(-F.log_softmax(s / 0.5, 0)[0])
    assert float(full) == pytest.approx(float(base) + 0.5 * extra_w / m + 0.25 * extra_p / m, rel=1e-10)


def test_tail_size_rule():
    assert tail_size(510, 0.10, 32) == 51      # N = 256: the released code's K_tail
    assert tail_size(62, 0.10, 32) == 32
    assert tail_size(14, 0.10, 32) == 14       # clipped to K_neg
    assert tail_size(100, 0.01, 3) == 10       # floor of 10


def test_tail_fit_recovers_a_known_weibull_index():
    """Shortfalls drawn with P(δ ≤ x) = (x/c)^β near 0 give a Weibull slope close to β."""
    rng = np.random.default_rng(0)
    beta_true, m = 3.0, 1200
    delta = 0.5 * rng.uniform(size=(m, m)) ** (1 / beta_true)
    sim = torch.as_tensor(1.0 - delta)
    pos = torch.arange(m).roll(m // 2)
    fit = tail_fit(sim, pos, **tail_fit_knobs())
    assert float(fit.beta_hat.median()) == pytest.approx(beta_true, rel=0.1)
    assert float(fit.delta_aic.median()) > 0  # a power-law tail favours Weibull
