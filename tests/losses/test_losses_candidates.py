"""The candidate-set knob of the InfoNCE- and WEINCE-kind losses.

- ``all_views`` (the default, the image study's: SimCLR's 2N − 1 candidates) is what the loss
  builders return unless told otherwise (its values are tested against brute force in
  test_losses.py and test_weince.py; it was checked bit for bit against the losses before the
  knob when the knob landed).
- ``cross_view`` (SimCSE's N candidates) against loops over anchors written from the definition:
  each row i of view 1 scores the N rows of view 2, its positive at column i; WEINCE's tail sets
  hold the N − 1 cross-view negatives and ρ0 is taken over the N anchors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from infonce_lab.losses import info_nce, similarity_stats, symmetric_info_nce, weince
from infonce_lab.losses.common import candidate_similarities
from infonce_lab.losses.weince import effective_inverse_temperature, global_tail_index
from infonce_lab.params import InfoNCEConfig, WeinceConfig, parse_params
from infonce_lab.pipeline.registry import build_loss
from loss_knobs import info_nce_knobs, weince_knobs


def _views(n: int, d: int, seed: int, dtype=torch.float64, noise: float = 0.8):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, d, generator=g, dtype=dtype)
    return z1, z1 + noise * torch.randn(n, d, generator=g, dtype=dtype)


def _value_and_grads(fn, z1, z2):
    a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    loss, st = fn(a, b)
    ga, gb = torch.autograd.grad(loss, (a, b))
    return loss.detach(), ga, gb, st


def test_registry_defaults_are_all_views():
    z1, z2 = _views(16, 6, 4, torch.float32)
    for cfg, ref in ((InfoNCEConfig(), lambda: info_nce(z1, z2, 0.2, **info_nce_knobs())),
                     (WeinceConfig(), lambda: weince(z1, z2, 0.2, **weince_knobs()))):
        loss = build_loss(cfg)
        assert loss.candidates == "all_views"
        assert torch.equal(loss(z1, z2, 0.2)[0], ref()[0])


# ------------------------------------------------------------------- cross_view InfoNCE: SimCSE
def brute_force_simcse(z1, z2, tau: float, decoupled: bool = False, top_m: int | None = None):
    """SimCSE's loss read literally: for each sentence i of view 1, −log of exp(s(i, i⁺)/τ) over
    the sum over the N rows j of view 2 (without j = i when decoupled; over the positive and its
    top_m hardest cross-view negatives when top_m is given)."""
    a, b = F.normalize(z1.double(), dim=1), F.normalize(z2.double(), dim=1)
    n = a.shape[0]
    total = 0.0
    for i in range(n):
        s = {j: float(a[i] @ b[j]) for j in range(n)}
        cands = [j for j in range(n) if not (decoupled and j == i)]
        if top_m is not None:
            cands = [i] + sorted((j for j in range(n) if j != i), key=lambda j: -s[j])[:top_m]
        total += -s[i] / tau + math.log(sum(math.exp(s[j] / tau) for j in cands))
    return total / n


@pytest.mark.parametrize("tau", [0.05, 0.5])
@pytest.mark.parametrize("decoupled", [False, True])
def test_cross_view_infonce_is_simcse(tau, decoupled):
    z1, z2 = _views(9, 5, 10)
    loss, _ = info_nce(z1, z2, tau, **info_nce_knobs(decoupled=decoupled, candidates="cross_view"))
    assert float(loss) == pytest.approx(brute_force_simcse(z1, z2, tau, decoupled), rel=1e-10)


def test_cross_view_infonce_is_one_direction_of_clip_and_differs_from_all_views():
    z1, z2 = _views(12, 5, 11)
    loss, _ = info_nce(z1, z2, 0.3, **info_nce_knobs(candidates="cross_view"))
    _, st = symmetric_info_nce(z1, z2, 0.3)
    assert float(loss) == pytest.approx(float(st["loss_a_to_b"]), rel=1e-12)
    # Collapsed embeddings: log of the number of candidates, N against 2N − 1.
    z = torch.ones(6, 3)
    assert float(info_nce(z, z, 0.3, **info_nce_knobs(candidates="cross_view"))[0]) == pytest.approx(math.log(6))
    assert float(info_nce(z, z, 0.3, **info_nce_knobs())[0]) == pytest.approx(math.log(11))


def test_cross_view_topm_control():
    z1, z2 = _views(10, 4, 12)
    base, _ = info_nce(z1, z2, 0.5, **info_nce_knobs(candidates="cross_view"))
    full, _ = info_nce(z1, z2, 0.5, **info_nce_knobs(topm_weight=0.5, top_m=3, candidates="cross_view"))
    extra = brute_force_simcse(z1, z2, 0.5, top_m=3)
    assert float(full) == pytest.approx(float(base) + 0.5 * extra, rel=1e-10)


def test_cross_view_infonce_gradcheck():
    z1, z2 = _views(5, 3, 13)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, b: info_nce(a, b, 0.5, **info_nce_knobs(candidates="cross_view"))[0], (z1, z2))


def test_tau_scale_runs_infonce_at_the_scaled_temperature():
    z1, z2 = _views(8, 4, 14)
    loss, st = build_loss(InfoNCEConfig(candidates="cross_view", tau_scale=1.5))(z1, z2, 0.05)
    ref, _ = info_nce(z1, z2, 0.075, **info_nce_knobs(candidates="cross_view"))
    assert float(loss) == pytest.approx(float(ref), rel=1e-12)
    assert float(st["tau_scaled"]) == pytest.approx(0.075)


# --------------------------------------------------------------------- cross_view WEINCE
def slow_cross_view_weince(z1, z2, tau: float, frac=0.10, min_pts=32, q=0.2, k_rho=10.0,
                           k_aic=1.0, margin=2.0, eps=1e-6):
    """WEINCE App. E (as the released code computes it) read literally over SimCSE's candidates,
    one anchor (a row of view 1) at a time: its negatives are the N − 1 other rows of view 2, the
    pivot ρ0 is over the N anchors."""
    a, b = F.normalize(z1.double(), dim=1), F.normalize(z2.double(), dim=1)
    sim = (a @ b.T).numpy()
    n = sim.shape[0]
    k_neg = n - 1
    k = min(max(max(min_pts, round(frac * k_neg)), 10), k_neg)
    burn = max(1, k // 20)
    rho, daic, beta_hat = np.zeros(n), np.zeros(n), np.zeros(n)
    for i in range(n):
        neg = np.array([sim[i, j] for j in range(n) if j != i])
        delta = np.sort(np.maximum(1.0 - neg, eps))[:k]
        rho[i] = delta[0]
        f = np.arange(1, k + 1) / (k + 1)
        x, yw, yg = np.log(delta[burn:]), np.log(f[burn:]), np.log(-np.log(f[burn:]))
        fits = []
        for y in (yw, yg):
            r = stats.linregress(x, y)
            fits.append((r.slope, max(float(((y - (r.intercept + r.slope * x)) ** 2).sum()), 1e-12)))
        (sw, ssew), (sg, sseg) = fits
        ssew += 1e6 if sw <= 0 else 0.0
        sseg += 1e6 if sg >= 0 else 0.0
        daic[i] = len(x) * math.log(sseg / ssew)
        beta_hat[i] = max(sw, 0.0)
    rho0 = np.sort(rho)[round(q * (n - 1))]
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    lam = np.array([sig(k_rho * (math.log(rho0) - math.log(rho[i]))) * sig(k_aic * (daic[i] - margin))
                    for i in range(n)])
    loss = 0.0
    for i in range(n):
        logits = [(1 - lam[i]) * sim[i, j] / tau + lam[i] * -math.log(1 - min(sim[i, j], 1 - eps))
                  for j in range(n)]
        mx = max(logits)
        loss += mx + math.log(sum(math.exp(v - mx) for v in logits)) - logits[i]
    return loss / n, lam, beta_hat, rho0, daic, sim


@pytest.mark.parametrize("n,seed,tau", [(40, 0, 0.5), (64, 1, 0.05), (12, 2, 0.3)])
def test_cross_view_weince_matches_the_slow_loop(n, seed, tau):
    z1, z2 = _views(n, 6, seed, noise=0.5)
    loss, st = weince(z1, z2, tau, **weince_knobs(candidates="cross_view"))
    ref_loss, lam, beta_hat, rho0, daic, _ = slow_cross_view_weince(z1, z2, tau)
    assert float(loss) == pytest.approx(ref_loss, rel=1e-9)
    assert st["lambda"].shape == (n,)
    np.testing.assert_allclose(st["lambda"].numpy(), lam, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(st["beta_hat"].numpy(), beta_hat, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(st["delta_aic"].numpy(), daic, rtol=1e-7, atol=1e-6)
    assert float(st["rho0"]) == pytest.approx(rho0)


def test_cross_view_weince_limits():
    z1, z2 = _views(16, 8, 5)
    zero, _ = weince(z1, z2, 0.2, **weince_knobs(lambda_mode="fixed", lambda_fixed=0.0, candidates="cross_view"))
    ref, _ = info_nce(z1, z2, 0.2, **info_nce_knobs(candidates="cross_view"))
    assert float(zero) == pytest.approx(float(ref), rel=1e-12)
    one, _ = weince(z1, z2, 0.2, **weince_knobs(lambda_mode="fixed", lambda_fixed=1.0, candidates="cross_view"))
    a, b = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    logits = -torch.log1p(-(a @ b.T).clamp(max=1 - 1e-6))
    assert float(one) == pytest.approx(float(F.cross_entropy(logits, torch.arange(16))), rel=1e-12)


def test_cross_view_weince_only_similarities_carry_gradient():
    z1, z2 = _views(12, 5, 6)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    loss, st = weince(z1, z2, 0.4, **weince_knobs(beta="per_anchor", candidates="cross_view"))
    g1, g2 = torch.autograd.grad(loss, (z1, z2))
    lam, beta_i = st["lambda"], st["beta_hat"].clamp(0.5, 16.0)
    y1, y2 = z1.detach().clone().requires_grad_(True), z2.detach().clone().requires_grad_(True)
    s = F.normalize(y1, dim=1) @ F.normalize(y2, dim=1).T
    logits = ((1 - lam) / 0.4)[:, None] * s + (lam * beta_i)[:, None] * -torch.log1p(-s.clamp(max=1 - 1e-6))
    h1, h2 = torch.autograd.grad(F.cross_entropy(logits, torch.arange(12)), (y1, y2))
    assert torch.allclose(g1, h1, atol=1e-12) and torch.allclose(g2, h2, atol=1e-12)


@pytest.mark.parametrize("variant", [
    {"lambda_fixed": 0.3},
    {"lambda_fixed": 0.7, "weib_topm_weight": 0.5, "pl_topm_weight": 0.5, "top_m": 3},
])
def test_cross_view_weince_gradcheck(variant):
    z1, z2 = _views(6, 3, 7)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    kw = {"lambda_mode": "fixed", "candidates": "cross_view", **variant}
    assert torch.autograd.gradcheck(lambda a, b: weince(a, b, 0.5, **weince_knobs(**kw))[0], (z1, z2))


def test_cross_view_recipe_terms_use_cross_view_negatives():
    z1, z2 = _views(14, 6, 9)
    base, _ = weince(z1, z2, 0.5, **weince_knobs(candidates="cross_view"))
    full, _ = weince(z1, z2, 0.5, **weince_knobs(weib_topm_weight=0.5, pl_topm_weight=0.25, top_m=4, beta_t=3.0, candidates="cross_view"))
    s_all = F.normalize(z1, dim=1) @ F.normalize(z2, dim=1).T
    extra_w = extra_p = 0.0
    for i in range(14):
        hard = sorted((j for j in range(14) if j != i), key=lambda j: -float(s_all[i, j]))[:4]
        s = torch.stack([s_all[i, i]] + [s_all[i, j] for j in hard])
        extra_w += float(-F.log_softmax(-3.0 * torch.log1p(-s.clamp(max=1 - 1e-6)), 0)[0])
        extra_p += float(-F.log_softmax(s / 0.5, 0)[0])
    expect = float(base) + 0.5 * extra_w / 14 + 0.25 * extra_p / 14
    assert float(full) == pytest.approx(expect, rel=1e-10)


def test_cross_view_global_tail_index_pools_cross_view_negatives():
    z1, z2 = _views(30, 4, 15)
    sim, pos, has_self = candidate_similarities(z1, z2, "cross_view")
    assert not has_self and sim.shape == (30, 30) and torch.equal(pos, torch.arange(30))
    beta, r2 = global_tail_index(sim, pos, 0.2, 50, has_self=False)
    neg = sim.numpy()[~np.eye(30, dtype=bool)]            # 30 × 29 cross-view negatives
    k = max(50, round(0.2 * neg.size))
    delta = np.sort(1.0 - neg)[:k]
    burn = k // 20
    x, y = np.log(delta[burn:]), np.log((np.arange(1, k + 1) / (k + 1))[burn:])
    r = stats.linregress(x, y)
    assert beta == pytest.approx(r.slope, rel=1e-9) and r2 == pytest.approx(r.rvalue ** 2, rel=1e-9)


def test_cross_view_registry_and_telemetry():
    z1, z2 = _views(10, 4, 16)
    loss = build_loss(WeinceConfig(candidates="cross_view", min_tail_points=5))
    assert loss.candidates == "cross_view"
    value, st = loss(z1, z2, 0.3)
    ref, _ = weince(z1, z2, 0.3, **weince_knobs(min_tail_points=5, candidates="cross_view"))
    assert float(value) == float(ref) and st["lambda"].shape == (10,)
    tel = similarity_stats(z1, z2, "cross_view")
    s = (F.normalize(z1, dim=1) @ F.normalize(z2, dim=1).T).numpy()
    off = s[~np.eye(10, dtype=bool)]
    assert float(tel["pos_sim"]) == pytest.approx(np.diag(s).mean())
    assert float(tel["neg_sim_max"]) == pytest.approx(off.max())
    assert float(tel["top1_acc"]) == pytest.approx((s.argmax(1) == np.arange(10)).mean())


def test_unknown_candidates_are_refused(raw):
    with pytest.raises(ValueError, match="unknown candidates"):
        candidate_similarities(torch.randn(3, 2), torch.randn(3, 2), "all")  # type: ignore[arg-type]
    raw["losses"]["simcse_infonce"]["candidates"] = "all"
    with pytest.raises(Exception, match="simcse_infonce.candidates"):
        parse_params(raw)


# --------------------------------------------------------------- WEINCE's effective temperature
def test_effective_inverse_temperature_is_the_secant_slope_of_the_logit():
    z1, z2 = _views(20, 5, 17, noise=0.4)
    tau, eps = 0.1, 1e-6
    _, st = weince(z1, z2, tau, **weince_knobs(lambda_mode="fixed", lambda_fixed=0.6, candidates="cross_view"))
    s = (F.normalize(z1, dim=1) @ F.normalize(z2, dim=1).T).numpy()

    def logit(v: float) -> float:
        return 0.4 * v / tau + 0.6 * -math.log(1 - min(v, 1 - eps))

    for i in range(20):
        hard = max(s[i, j] for j in range(20) if j != i)
        expect = (logit(s[i, i]) - logit(hard)) / (s[i, i] - hard)
        assert float(st["inv_tau_eff"][i]) == pytest.approx(expect, rel=1e-9)
    # λ = 0: InfoNCE's own 1/τ, whatever the scores.
    _, st0 = weince(z1, z2, tau, **weince_knobs(lambda_mode="fixed", lambda_fixed=0.0))
    assert torch.allclose(st0["inv_tau_eff"], torch.full((40,), 1 / tau, dtype=torch.float64))


def test_effective_inverse_temperature_where_positive_and_negative_tie():
    sim = torch.tensor([[0.5, 0.5], [0.2, 0.9]], dtype=torch.float64)
    pos = torch.arange(2)
    a = torch.tensor([[2.0], [2.0]], dtype=torch.float64)
    b = torch.tensor([[1.0], [1.0]], dtype=torch.float64)
    rho = torch.tensor([0.5, 0.8], dtype=torch.float64)   # hardest negatives 0.5 and 0.2
    k = effective_inverse_temperature(sim, pos, a, b, rho, 1e-6)
    assert float(k[0]) == pytest.approx(2.0 + 1 / (1 - 0.5))   # the tangent where they tie
    assert float(k[1]) == pytest.approx(2.0 + (math.log(0.8) - math.log(0.1)) / 0.7)
