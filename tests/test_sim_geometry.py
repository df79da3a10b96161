"""Hessian sharpening, large-batch limits and population geometry (SPECS D.6–D.8, E, F.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, special

from infonce_lab.simulation import hessian as hs
from infonce_lab.simulation import large_batch as lb
from infonce_lab.simulation import population as pop


def _unit(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Hessian (SPECS D.6, D.8)


def test_tangent_basis_is_orthonormal_and_tangent():
    z = _unit(np.random.default_rng(0), 50, 5)
    e = hs.tangent_basis(z)
    assert np.allclose(np.einsum("ndm,nd->nm", e, z), 0, atol=1e-14)
    assert np.allclose(np.einsum("ndm,ndk->nmk", e, e), np.eye(4), atol=1e-14)


@pytest.mark.parametrize("d", [2, 3, 6])
@pytest.mark.parametrize("beta", [1.0, 5.0, 50.0, 200.0])
def test_d6_formula_matches_central_finite_differences(d, beta):
    rng = np.random.default_rng(d)
    z, cands = _unit(rng, 8, d), _unit(rng, 8, 7, d)
    pos = rng.integers(0, 7, 8)
    err, cancelled = hs.formula_vs_fd(z, cands, pos, beta)
    assert not cancelled.any()
    assert err.max() <= 1e-5


def test_gradient_formula_matches_finite_differences():
    rng = np.random.default_rng(3)
    z, cands = _unit(rng, 4), _unit(rng, 6, 4)
    e = hs.tangent_basis(z)
    eps = 1e-6
    fd = [
        (hs.anchor_loss(hs.exp_map(z, eps * e[:, m]), cands, 2, 3.0)
         - hs.anchor_loss(hs.exp_map(z, -eps * e[:, m]), cands, 2, 3.0)) / (2 * eps)
        for m in range(3)
    ]
    assert np.allclose(hs.riemannian_grad(z, cands, 2, 3.0), fd, rtol=1e-7)


def test_hessian_grows_linearly_with_coefficient_the_gap_at_a_non_optimal_anchor():
    # Positive at 100°, negatives at 10° (the maximum) and −60°: s_ik* − s_ij = cos10° − cos100°.
    ang = np.deg2rad([100.0, 10.0, -60.0])
    cands = np.stack([np.cos(ang), np.sin(ang)], 1)
    z = np.array([1.0, 0.0])
    betas = np.array([50.0, 100.0, 200.0])
    norms = np.array([np.abs(hs.riemannian_hessian(z, cands, 0, b)).max() for b in betas])
    slope = np.polyfit(np.log(betas), np.log(norms), 1)[0]
    assert slope == pytest.approx(1.0, abs=0.01)
    assert norms[-1] / betas[-1] == pytest.approx(np.cos(ang[1]) - np.cos(ang[0]), rel=1e-3)


def test_whole_loss_scaling_trap_minimizer_and_perturbed_trap():
    res = {r["name"]: r for r in hs.hessian_scaling(
        [hs.s1_trap(), hs.s1_trap_perturbed(), hs.s1_minimizer()], betas=(1, 10, 100, 200))}
    # Non-optimal with a unique nearest negative: ‖H‖ ∝ β asymptotically.
    assert res["s1_trap_perturbed"]["slope_full_top"] == pytest.approx(1.0, abs=0.02)
    # The exact trap has tied negatives: the covariance term keeps ‖H‖ ∝ β².
    assert res["s1_trap"]["slope_full_top"] == pytest.approx(2.0, abs=0.02)
    # Minimizer with a unique positive maximum: ‖H‖ → 0 at rate ≈ the margin.
    m = res["s1_minimizer"]
    assert m["norm_full"][-1] < 1e-100
    assert m["decay_rate_full_top"] == pytest.approx(m["min_margin"], rel=0.02)
    assert max(r["fd_rel_err_max"] for r in res.values()) <= 1e-5


# ---------------------------------------------------------------------------------------------
# Large-batch limits (SPECS E.1, E.5(1), E.6, F.3)


@pytest.mark.parametrize("d", [3, 16, 128])
@pytest.mark.parametrize("tau", [1.0, 0.1, 0.02])
def test_vmf_log_volume_against_quadrature(d, tau):
    # V = |S^{d−2}|·∫_{−1}^{1} e^{t/τ}(1−t²)^{(d−3)/2} dt, integrand scaled by e^{−1/τ}.
    log_area = math.log(2) + (d - 1) / 2 * math.log(math.pi) - special.gammaln((d - 1) / 2)
    val, _ = integrate.quad(lambda t: math.exp((t - 1) / tau) * (1 - t * t) ** ((d - 3) / 2),
                            -1, 1, epsabs=0, epsrel=1e-12, limit=200)
    assert lb.log_vmf_volume(tau, d) == pytest.approx(log_area + 1 / tau + math.log(val), rel=1e-9)


def test_uniform_mgf_and_wang_isola_limit_against_sampling():
    rng = np.random.default_rng(0)
    t = lb.sample_uniform_cosine(rng, (400_000,), 16)
    assert math.log(np.mean(np.exp(2.0 * t))) == pytest.approx(float(lb.log_mgf_uniform(2.0, 16)),
                                                                abs=5e-3)
    x, y = lb.sample_vmf_pairs(rng, 20_000, 16, 10.0)
    assert np.mean(np.sum(x * y, 1)) == pytest.approx(lb.mean_resultant(10.0, 16), abs=5e-3)


def test_wang_isola_gap_decays():
    # One anchor's loss spreads as M^{−1/2}; the gap of the expectation (the theorem's quantity)
    # closes as 1/M, inside the O(M^{−1/2}) bound.
    r = lb.wang_isola_gap(d=8, tau=0.5, ms=(32, 128, 512, 2048), anchors=1000, check_pairs=1024)
    assert r["limit_from_align_uniform_sample"] == pytest.approx(r["limit"], abs=0.03)
    assert r["slope_sd_per_anchor"] == pytest.approx(-0.5, abs=0.05)
    assert r["slope_gap_of_expectation"] == pytest.approx(-1.0, abs=0.05)
    assert r["gap_of_expectation"][-1] == pytest.approx(r["gap_theory_leading"][-1], rel=0.1)


def test_large_batch_gradient_cosine_increases_with_n():
    torch.set_num_threads(2)
    for critic in ("cosine", "rbf"):
        r = lb.grad_consistency(critic, ns=(4, 32, 256), seeds=2, n_ref=1024, batch=16)
        assert np.all(np.diff(r["cos_mean"]) > 0), r["cos_mean"]
        assert r["cos_mean"][-1] > 0.9


def test_value_gap_positive_in_denominator_adds_a_decaying_bias():
    torch.set_num_threads(2)
    r = lb.value_gap("rbf", ns=(4, 64, 1024), seeds=2, n_ref=4096, batch=32)
    with_pos, dec = np.array(r["with_positive"]["gap_mean"]), np.array(r["decoupled"]["gap_mean"])
    assert np.all(np.diff(with_pos) < 0) and np.all(with_pos > dec)
    assert abs(dec[-1]) < 0.02


# ---------------------------------------------------------------------------------------------
# Population geometry (SPECS E.5(2), E.5(3))


def test_gibbs_mass_of_a_flat_potential_is_the_area_fraction():
    # The two caps of radius 0.5 do not overlap (the centres are ~2.1 rad apart).
    assert np.arccos(pop.well_centres()[0] @ pop.well_centres()[1]) > 1.0
    res = pop.gibbs_mass(lambda z: np.zeros(len(z)), [1.0, 0.1], radius=0.5, n_samples=200_000)
    expected = 2 * 2 * math.pi * (1 - math.cos(0.5)) / (4 * math.pi)
    assert pop.cap_area_fraction(0.5) * 2 == pytest.approx(expected)
    for m, se in zip(res["mass"], res["se"], strict=True):
        assert abs(m - expected) < 4 * se + 1e-12


def test_kde_analytic_gradient_matches_autograd():
    z = torch.nn.functional.normalize(torch.randn(2, 1, 30, 3, dtype=torch.float64), dim=-1)
    z.requires_grad_(True)
    inv2h2 = (0.5 / torch.tensor([0.35, 0.1], dtype=torch.float64) ** 2).view(-1, 1, 1, 1)
    w = torch.randn(2, 1, 30, dtype=torch.float64)

    def reference(v: torch.Tensor) -> torch.Tensor:
        c = (v @ v.transpose(-1, -2)).clamp(-1 + 1e-9, 1 - 1e-9)
        return torch.logsumexp(-torch.arccos(c) ** 2 * inv2h2, -1) - math.log(30)

    (g1,) = torch.autograd.grad((pop.GeodesicKdeLogDensity.apply(z, inv2h2) * w).sum(), z)
    (g2,) = torch.autograd.grad((reference(z) * w).sum(), z)

    def tangential(g: torch.Tensor) -> torch.Tensor:  # the radial part is projected out anyway
        return g - (g * z).sum(-1, keepdim=True) * z

    assert torch.allclose(tangential(g1), tangential(g2), atol=1e-5)


def test_modality_gap_is_zero_for_identical_histograms_and_positive_otherwise():
    rng = np.random.default_rng(0)
    ang = rng.vonmises(0.0, 6.0, (2, 8000))
    z = np.stack([np.cos(ang), np.sin(ang)], -1)
    p = pop.angle_histograms(z)
    assert np.allclose(p.sum(1), 1)
    assert pop.symmetric_kl(p[0], p[0]) == 0.0
    assert pop.symmetric_kl(p[0], p[1]) < 0.05  # two samples of one law: small
    shifted = np.stack([np.cos(ang[1] + 1.0), np.sin(ang[1] + 1.0)], -1)[None]
    q = pop.angle_histograms(shifted)[0]
    assert pop.symmetric_kl(p[0], q) > 1.0
    assert pop.symmetric_kl(p[0], q) == pytest.approx(pop.symmetric_kl(q, p[0]))


def test_experiment_drivers_run_at_toy_sizes():
    torch.set_num_threads(2)
    h = hs.run_hessian(n_random=3, betas=(1, 10, 100))
    assert h["random"]["count"] == 3 and h["random"]["fd_rel_err_max"] <= 1e-5
    g = pop.run_gibbs(taus=(1.0, 0.1), extra_taus=(0.1,), seeds=2, particles=32, steps=20,
                      n_gibbs=5000)
    assert len(g["by_bandwidth"]) == 3 and len(g["by_bandwidth"][0]["trained_mean"]) == 2
    m = pop.run_modality_gap(sigmas=(0.0, 0.5), seeds=2, steps=20, batch=32, n_eval=500)
    assert np.array(m["d_sym_per_seed"]).shape == (2, 2)
    assert sum(m["outlier_vs_collapsed"].values()) == 4
