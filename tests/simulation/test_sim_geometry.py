"""Hessian sharpening, large-batch limits and population geometry (annealing paper §5, geometry
paper, Wang–Isola)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, special

from infonce_lab.simulation import estimates as est
from infonce_lab.simulation import hessian as hs
from infonce_lab.simulation import large_batch as lb
from infonce_lab.simulation import lifted_energy as le
from infonce_lab.simulation import population as pop
from references import hard_negative_weights
from sim_params import section


def _unit(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Hessian (annealing paper §5, App. C.3)


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
# Large-batch limits (geometry paper Thm 3.1; Wang–Isola Theorem 1)


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
    # the same, as intervals over Monte-Carlo replicates (what the report decides on)
    e = r["estimates"]
    assert e["slope_sd_per_anchor"]["low"] < -0.45 and e["slope_sd_per_anchor"]["high"] > -0.55
    assert e["slope_gap_of_expectation"]["high"] < -0.8
    assert e["gap_at_max_m"]["t"]["n"] == 10
    assert abs(e["limit_check"]["value"]) < 0.03


def test_large_batch_gradient_cosine_increases_with_n():
    torch.set_num_threads(2)
    for critic in ("cosine", "rbf"):
        r = lb.grad_consistency(critic, ns=(4, 32, 256), seeds=2, n_ref=1024, batch=16)
        assert np.all(np.diff(r["cos_mean"]) > 0), r["cos_mean"]
        assert r["cos_mean"][-1] > 0.9
        assert r["estimates"]["slope_one_minus_cos"]["value"] < -0.5
        assert r["estimates"]["cos_at_max_n"]["n"] == 2


def test_value_gap_positive_in_denominator_adds_a_decaying_bias():
    torch.set_num_threads(2)
    r = lb.value_gap("rbf", ns=(4, 64, 1024), seeds=2, n_ref=4096, batch=32, bootstrap=100)
    with_pos, dec = np.array(r["with_positive"]["gap_mean"]), np.array(r["decoupled"]["gap_mean"])
    assert np.all(np.diff(with_pos) < 0) and np.all(with_pos > dec)
    assert abs(dec[-1]) < 0.02
    slope = r["with_positive"]["estimates"]["slope_rms_gap"]
    assert slope["low"] <= slope["value"] <= slope["high"] < 0


# ---------------------------------------------------------------------------------------------
# Population geometry (the geometry paper's Gibbs and modality-gap experiments)


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
    h = hs.run_hessian(**section("hessian", n_random=3, betas=(1, 10, 100)))
    assert h["random"]["count"] == 3 and h["random"]["fd_rel_err_max"] <= 1e-5
    g = pop.run_gibbs(**section(
        "gibbs", taus=(1.0, 0.1), extra_bandwidths=(0.2, 0.1), extra_taus=(0.1,), seeds=2,
        particles=32, bandwidth_seeds=3, bandwidth_particles=40, steps=20, n_gibbs=5000))
    assert len(g["published"]["taus"]) == 2
    assert g["convergence"] == {"steps": 20, "steps_doubled": 40, "continued": True}
    row = g["published"]["taus"][1]
    assert set(row["minus_gibbs"]) == {"step", "half_step"}
    assert row["minus_gibbs"]["half_step"]["t"]["n"] == 2
    test = g["bandwidth_test"]
    assert [b["h"] for b in test["by_bandwidth"]] == [0.35, 0.2, 0.1]
    assert len(test["by_bandwidth"][2]["taus"][0]["per_seed"]["step"]) == 3
    assert [r["h"] for r in test["parting_reduction"]] == [0.2, 0.1]
    assert pop.run_gibbs(**section(
        "gibbs", taus=(1.0, 0.1), extra_bandwidths=(), seeds=2, particles=16, steps=2,
        n_gibbs=2000))["bandwidth_test"] is None
    m = pop.run_modality_gap(**section(
        "modality_gap", sigmas=(0.0, 0.5), seeds=4, steps=20, batch=32, n_eval=500, arm_sigma=0.5,
        arm_batches=(16, 32, 64)))
    # the verdicts at the steps given, the check at half of them: one run read twice
    assert m["convergence"] == {"steps": 10, "steps_doubled": 20, "continued": True,
                                "verdict_at": 20}
    for name in pop.LOSSES:
        assert np.array(m["by_loss"][name]["half_step"]["d_sym_per_seed"]).shape == (2, 4)
    assert sum(m["diagnosis"]["cross"]["half_step"].values()) == 8
    assert [b["sigma_mis"] for b in m["excess_over_identity"]["symmetric"]["by_sigma"]] == [0, 0.5]
    assert set(m["slope"]) == {"symmetric", "x_to_y", "excess_symmetric", "identity"}
    assert set(m["trend"]["symmetric"]) == {"step", "half_step"}
    for key in ("step", "half_step"):  # the runs the trend leaves out are the collapsed ones
        collapsed = np.array(m["diagnosis"]["collapsed_per_seed"][key])
        assert m["trend"]["symmetric"][key]["excluded_per_sigma"] == collapsed.sum(1).tolist()
    _check_the_batch_negatives_arm(m)
    with pytest.raises(ValueError, match="arm_sigma"):  # not a σ_mis of the grid
        pop.run_modality_gap(**section(
            "modality_gap", sigmas=(0.0, 0.5), seeds=4, steps=2, batch=8, arm_sigma=0.4))
    with pytest.raises(ValueError, match="even"):
        pop.run_modality_gap(**section(
            "modality_gap", sigmas=(0.0, 0.5), seeds=4, steps=3, batch=8, arm_sigma=None))


def _check_the_batch_negatives_arm(m: dict) -> None:
    """The arm's statistics recomputed from the file's per-seed values (brute force): the
    reference is the experiment's own symmetric run at arm_sigma, every arm is scored against
    the inputs' gap of the same evaluation pairs, collapsed seeds leave out the pair."""
    arm = m["batch_negatives"]
    k = m["sigma_mis"].index(arm["sigma_mis"])
    d_id = np.array(arm["identity_d_sym_per_seed"])
    assert np.allclose(d_id, m["identity"]["d_sym_per_seed"][k])
    assert [(a["batch"], a["beta_hard"], a["reference"]) for a in arm["arms"]] == [
        (16, 0.0, False), (32, 0.0, True), (64, 0.0, False), (32, 1.0, False)]
    (ref,) = [a for a in arm["arms"] if a["reference"]]
    for key in ("step", "half_step"):
        d_ref = np.array(ref["d_sym_per_seed"][key])
        assert np.allclose(d_ref, m["by_loss"]["symmetric"][key]["d_sym_per_seed"][k])
        assert ref["collapsed_per_seed"][key] == m["diagnosis"]["collapsed_per_seed"][key][k]
        for a in arm["arms"]:
            keep = ~np.array(a["collapsed_per_seed"][key]) & ~np.array(ref["collapsed_per_seed"][key])
            d = np.array(a["d_sym_per_seed"][key])
            stat = (d - d_id) - arm["gap_share"] * (d_ref - d_id)
            want = est.yuen(stat[keep], arm["trim"])
            got = a["minus_share_of_reference"][key]
            assert a["excluded"][key] == int((~keep).sum())
            if want is None:
                assert got["value"] is None
            else:
                assert got["value"] == pytest.approx(want.mean) and got["t"]["se"] == pytest.approx(want.se)
        # the other arms trained again: not the reference's encoders
        assert not np.allclose(arm["arms"][0]["d_sym_per_seed"][key], d_ref)


def test_rank_trend_is_kendalls_tau_over_the_kept_runs():
    """Brute force: scipy's τ_b on the kept runs; a monotone trend reads +1 however large the
    collapsed runs it leaves out; too few kept runs at a σ is undefined, not decided."""
    from scipy.stats import kendalltau

    rng = np.random.default_rng(3)
    sig = [0.0, 0.3, 0.6]
    values = np.array([[0.1, 0.12, 50.0, 0.11], [0.3, 0.32, 0.31, 0.29], [0.6, 48.0, 0.61, 0.62]])
    keep = values < 10  # the two saturated (collapsed) runs out
    r = pop.rank_trend(values, sig, keep, boot=200)
    x_kept = np.repeat(sig, 4)[keep.ravel()]
    # τ_b's largest value with σ tied in groups: every kept run above every run at a lower σ
    perfect = kendalltau(x_kept, np.arange(x_kept.size)).statistic
    assert r["value"] == pytest.approx(perfect) and r["excluded"] == 2 and r["n"] == 10
    assert r["low"] > 0.8 * perfect  # within-σ resampling cannot break the order across σ
    noisy = values + rng.normal(0, 0.2, values.shape)
    want = kendalltau(x_kept, noisy.ravel()[keep.ravel()]).statistic
    got = pop.rank_trend(noisy, sig, keep, boot=200)
    assert got["value"] == pytest.approx(want) and got["low"] <= want <= got["high"]
    # kept, the collapsed runs would reverse the last σ's order and lower τ
    assert pop.rank_trend(values, sig, np.ones_like(keep), boot=50)["value"] < r["value"]
    keep[0, :3] = False
    assert pop.rank_trend(values, sig, keep, boot=50)["value"] is None


# ---------------------------------------------------------------------------------------------
# Convergence runs, the batched loss, the controls (the geometry paper's Gibbs and modality-gap
# experiments)


def test_doubled_steps_continue_the_step_run_bit_for_bit():
    """One run of 2S steps serves both step counts: its state at S is the S-step run."""
    settings = [(0.35, 0.5), (0.1, 0.1)]
    at_s, at_2s = pop.free_energy_particles(settings, seeds=2, particles=16, steps=(7, 14))
    (alone,) = pop.free_energy_particles(settings, seeds=2, particles=16, steps=(7,))
    assert np.array_equal(at_s, alone) and not np.array_equal(at_s, at_2s)
    sig = np.array([0.0, 0.3])
    snaps, _ = pop.train_modality_encoders(sig, steps=(5, 10), batch=16)
    (one,), _ = pop.train_modality_encoders(sig, steps=(5,), batch=16)
    for name in pop.LOSSES:
        assert all(torch.equal(a, b) for a, b in zip(snaps[0][name], one[name], strict=True))


def test_the_two_losses_start_from_the_same_maps_and_then_differ():
    sig = np.array([0.2, 0.4, 0.6])
    (first,), info = pop.train_modality_encoders(sig, steps=(1,), batch=16, lr=1e-12)
    f_sym, f_one = first["symmetric"][0], first["x_to_y"][0]
    assert torch.allclose(f_sym.double(), torch.from_numpy(info["f_init"]), atol=1e-9)
    assert torch.allclose(f_one.double(), torch.from_numpy(info["f_init"]), atol=1e-9)
    (later,), _ = pop.train_modality_encoders(sig, steps=(30,), batch=16)
    assert not torch.allclose(later["symmetric"][0], later["x_to_y"][0])


@pytest.mark.parametrize("symmetric", [True, False])
def test_batched_infonce_matches_the_projects_loss_and_its_gradients(symmetric):
    from infonce_lab.losses import symmetric_info_nce

    gen = torch.Generator().manual_seed(0)
    xa = torch.randn(4, 12, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    xb = torch.randn(4, 12, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, generator=gen, dtype=torch.float64)
    a, b = torch.nn.functional.normalize(xa, dim=-1), torch.nn.functional.normalize(xb, dim=-1)
    got = pop.batched_info_nce(a, b, 0.07, symmetric)
    if symmetric:
        ref = torch.stack([symmetric_info_nce(xa[r], xb[r], 0.07)[0] for r in range(4)])
    else:  # x → y: cross-entropy of each row of a·bᵀ/τ, the positive on the diagonal
        ref = torch.stack([torch.nn.functional.cross_entropy(a[r] @ b[r].T / 0.07,
                                                             torch.arange(12)) for r in range(4)])
    assert torch.allclose(got, ref, atol=1e-12)
    g_got = torch.autograd.grad((got * w).sum(), (xa, xb), retain_graph=True)
    g_ref = torch.autograd.grad((ref * w).sum(), (xa, xb))
    for x, y in zip(g_got, g_ref, strict=True):
        assert torch.allclose(x, y, atol=1e-10)


def test_batched_infonce_mixes_the_two_losses_per_run():
    gen = torch.Generator().manual_seed(1)
    a = torch.nn.functional.normalize(torch.randn(6, 10, 2, generator=gen), dim=-1)
    b = torch.nn.functional.normalize(torch.randn(6, 10, 2, generator=gen), dim=-1)
    flags = torch.tensor([True, False, True, False, False, True])
    mixed = pop.batched_info_nce(a, b, 0.1, flags)
    assert torch.allclose(mixed[flags], pop.batched_info_nce(a[flags], b[flags], 0.1, True))
    assert torch.allclose(mixed[~flags], pop.batched_info_nce(a[~flags], b[~flags], 0.1, False))


def test_batched_infonce_refuses_a_temperature_float32_cannot_hold():
    with pytest.raises(ValueError, match="0.025"):
        pop.train_modality_encoders(np.array([0.1]), steps=(1,), batch=8, tau=0.01)


def _hard_weights_brute(logits: np.ndarray, beta: float) -> np.ndarray:
    """Robinson et al.'s weights, one entry at a time: w_ij = (B − 1)·e^{β·ℓ_ij} / Σ_{k≠i}
    e^{β·ℓ_ik} for j ≠ i, 1 on the diagonal."""
    n = logits.shape[0]
    w = np.ones((n, n))
    for i in range(n):
        total = sum(math.exp(beta * logits[i, k]) for k in range(n) if k != i)
        for j in range(n):
            if j != i:
                w[i, j] = (n - 1) * math.exp(beta * logits[i, j]) / total
    return w


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0])
def test_hard_negative_weights_have_mean_one_and_rank_like_the_logits(beta):
    rng = np.random.default_rng(7)
    logits = rng.uniform(-1, 1, (3, 9, 9)) / 0.2  # three anchors' sets, s/τ at τ = 0.2
    w = hard_negative_weights(torch.from_numpy(logits), beta).numpy()
    off = ~np.eye(9, dtype=bool)
    for r in range(3):
        assert np.allclose(w[r], _hard_weights_brute(logits[r], beta), rtol=1e-12)
        assert np.allclose(np.diagonal(w[r]), 1.0)  # the positive is not reweighted
        assert np.allclose(w[r][off].reshape(9, 8).mean(1), 1.0)  # mean 1 over the negatives
        for i in range(9):
            neg = [j for j in range(9) if j != i]
            if beta == 0:
                assert np.allclose(w[r, i, neg], 1.0)
            else:  # a harder (more similar) negative weighs more
                assert list(np.argsort(w[r, i, neg])) == list(np.argsort(logits[r, i, neg]))


def _hard_loss_brute(xa: torch.Tensor, xb: torch.Tensor, tau: float, beta: float,
                     symmetric: bool) -> torch.Tensor:
    """InfoNCE with Robinson et al.'s weights, one anchor at a time, the weights a constant:
    −log(e^{ℓ_ii} / (e^{ℓ_ii} + Σ_{j≠i} w_ij·e^{ℓ_ij})), over the rows (and the columns)."""
    a = torch.nn.functional.normalize(xa, dim=-1)
    b = torch.nn.functional.normalize(xb, dim=-1)

    def rows(ell: torch.Tensor) -> torch.Tensor:
        w = torch.from_numpy(_hard_weights_brute(ell.detach().numpy(), beta))
        n = ell.shape[0]
        terms = [torch.log(torch.exp(ell[i, i]) + sum(w[i, j] * torch.exp(ell[i, j])
                                                      for j in range(n) if j != i)) - ell[i, i]
                 for i in range(n)]
        return torch.stack(terms).mean()

    out = []
    for r in range(a.shape[0]):
        ell = a[r] @ b[r].T / tau
        out.append(0.5 * (rows(ell) + rows(ell.T)) if symmetric else rows(ell))
    return torch.stack(out)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_batched_infonce_with_hard_negatives_matches_a_brute_force_reference(
        symmetric, beta, monkeypatch):
    gen = torch.Generator().manual_seed(2)
    xa = torch.randn(5, 7, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    xb = torch.randn(5, 7, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, generator=gen, dtype=torch.float64)
    ref = _hard_loss_brute(xa, xb, 0.1, beta, symmetric)
    g_ref = torch.autograd.grad((ref * w).sum(), (xa, xb))
    for chunk in (1 << 20, 2 * 49):  # all runs in one chunk, or two runs at a time (3 chunks)
        monkeypatch.setattr(pop, "CHUNK_ENTRIES", chunk)
        a, b = (torch.nn.functional.normalize(x, dim=-1) for x in (xa, xb))
        got = pop.batched_info_nce(a, b, 0.1, symmetric, beta)
        assert torch.allclose(got, ref, atol=1e-12)
        g_got = torch.autograd.grad((got * w).sum(), (xa, xb))
        for x, y in zip(g_got, g_ref, strict=True):
            assert torch.allclose(x, y, atol=1e-10)


def test_hard_negatives_at_beta_zero_are_plain_infonce_exactly():
    gen = torch.Generator().manual_seed(4)
    a = torch.nn.functional.normalize(torch.randn(4, 10, 2, generator=gen), dim=-1)
    b = torch.nn.functional.normalize(torch.randn(4, 10, 2, generator=gen), dim=-1)
    flags = torch.tensor([True, False, True, False])
    assert torch.equal(pop.batched_info_nce(a, b, 0.07, flags, beta_hard=0.0),
                       pop.batched_info_nce(a, b, 0.07, flags))
    # and the weighted path tends to it (float64: the weights are 1 up to rounding)
    a64, b64 = a.double(), b.double()
    assert torch.allclose(pop.batched_info_nce(a64, b64, 0.07, flags, beta_hard=1e-12),
                          pop.batched_info_nce(a64, b64, 0.07, flags), atol=1e-12)
    assert torch.allclose(hard_negative_weights(a64 @ b64.transpose(1, 2) / 0.07, 0.0),
                          torch.ones(4, 10, 10, dtype=torch.float64), atol=1e-15)


def test_hard_negative_runs_share_the_maps_and_batches_of_the_plain_ones():
    sig = np.array([0.2, 0.4, 0.6])
    (first,), _ = pop.train_modality_encoders(sig, steps=(1,), batch=16, lr=1e-12, hard_runs=[1, 2])
    f_hard, g_hard = first[pop.HARD]
    assert torch.allclose(f_hard, first["symmetric"][0][[1, 2]], atol=1e-9)
    # a vanishing β trains the same encoders on the same batches; β = 1 others
    snaps, info = pop.train_modality_encoders(sig, steps=(20,), batch=16, hard_runs=[1, 2],
                                              beta_hard=1e-6)
    (near,) = snaps
    assert torch.allclose(near[pop.HARD][0], near["symmetric"][0][[1, 2]], atol=1e-4)
    assert info["final_loss_hard_20"].shape == (2,) and info["final_loss_20"].shape == (2, 3)
    ((far,), _) = pop.train_modality_encoders(sig, steps=(20,), batch=16, hard_runs=[1, 2])
    assert not torch.allclose(far[pop.HARD][0], far["symmetric"][0][[1, 2]], atol=1e-3)
    # the initial maps given: the batches follow the seed, the maps do not
    (given,), info2 = pop.train_modality_encoders(sig, steps=(1,), batch=16, lr=1e-12,
                                                  init=(info["f_init"], info["g_init"]),
                                                  seed=[0, 16], losses=("symmetric",))
    assert np.array_equal(info2["f_init"], info["f_init"])
    assert torch.allclose(given["symmetric"][0].double(), torch.from_numpy(info["f_init"]),
                          atol=1e-9)
    with pytest.raises(ValueError, match="beta_hard"):  # e^{−2(1+β)/τ} below float32's range
        pop.train_modality_encoders(sig, steps=(1,), batch=8, hard_runs=[0], beta_hard=3.0)


def test_identity_control_is_the_inputs_own_gap():
    """Identity encoders: D_sym of the input angles — ~0 when both modalities share their latent
    law (σ_mis = 0), growing with σ_mis (the blurred modality-2 marginal)."""
    sig = np.repeat([0.0, 0.35, 0.7], 3)
    x1, x2 = pop.evaluation_pairs(sig, n_eval=8000, seed=3)
    d = pop.symmetric_kl(pop.angle_histograms(x1.numpy()),
                         pop.angle_histograms(x2.numpy())).reshape(3, 3)
    assert d[0].max() < 0.05
    assert np.all(np.diff(d.mean(1)) > 0) and d[2].min() > 5 * d[0].max()
    # embed is the identity for the identity map, so the trained path sees the same pairs
    eye = torch.eye(2, dtype=torch.float32).repeat(len(sig), 1, 1)
    assert np.allclose(pop.angle_counts(pop.embed(x1, eye)), pop.angle_counts(x1.numpy()))


def test_half_count_histograms_bound_a_collapsed_encoders_d_sym():
    """Disjoint supports: D_sym saturates near 2·log(n/1e-8) with the published pseudo-counts,
    and far lower with ½ count per bin — the pseudo-count sets an outlier's size."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.0, 0.05, 8000), rng.normal(1.5, 0.05, 8000)
    za = np.stack([np.cos(a), np.sin(a)], -1)[None]
    zb = np.stack([np.cos(b), np.sin(b)], -1)[None]
    ca, cb = pop.angle_counts(za), pop.angle_counts(zb)
    d_pub = pop.symmetric_kl(pop.normalised(ca), pop.normalised(cb))[0]
    d_half = pop.symmetric_kl(pop.normalised(ca, 0.5), pop.normalised(cb, 0.5))[0]
    assert 0.8 * 2 * math.log(8000 / 1e-8) < d_pub < 1.1 * 2 * math.log(8000 / 1e-8)
    assert d_half < d_pub / 2


def test_trimmed_slope_over_sigma():
    from scipy import stats

    rng = np.random.default_rng(1)
    sig = np.linspace(0, 0.7, 5)
    y = 0.01 + 0.5 * sig[:, None] + 0.01 * rng.normal(size=(5, 12))
    y[1, :2] = 50.0
    t = pop.trimmed_slope(y, sig, 0.25)  # two saturated seeds at one σ do not move it
    lo, hi = t.interval()
    assert lo < 0.5 < hi and hi - lo < 0.1
    assert t.mean == pytest.approx(np.polyfit(sig, stats.trim_mean(y, 0.25, axis=1), 1)[0])
    y[1, :4] = 50.0  # more than the trimming removes: the slope's interval says so
    lo, hi = pop.trimmed_slope(y, sig, 0.25).interval()
    assert hi - lo > 1.0


# ---------------------------------------------------------------------------------------------
# Estimates (simulation/estimates.py)


def test_yuen_is_the_t_test_untrimmed_and_robust_trimmed():
    from scipy import stats

    rng = np.random.default_rng(2)
    v = rng.normal(1.0, 0.3, 12)
    t0 = est.yuen(v, 0.0)
    ref = stats.ttest_1samp(v, 0.8)
    assert t0.mean == pytest.approx(v.mean()) and t0.df == 11
    assert t0.p_greater(0.8) == pytest.approx(ref.pvalue / 2)
    # Yuen's two-sample test in scipy (trim=) against ours on the difference of two samples'
    # trimmed means — the one-sample parts must give the same standard errors
    w = rng.normal(0.5, 0.3, 12)
    a, b = est.yuen(v, 0.25), est.yuen(w, 0.25)
    diff = est.difference(a, b)
    ref2 = stats.ttest_ind(v, w, trim=0.25, equal_var=False)
    assert diff.mean / diff.se == pytest.approx(ref2.statistic, rel=1e-9)
    assert diff.df == int(ref2.df)
    # three saturated seeds move the mean, not the 25%-trimmed mean
    bad = np.r_[v[:9], [50.0, 50.0, 50.0]]
    assert abs(est.yuen(bad, 0.25).mean - stats.trim_mean(v[:9], 0.0)) < 0.5
    assert est.yuen([1.0, 2.0, 3.0], 0.4) is None


def test_welch_combination_matches_scipys_welch_test():
    from scipy import stats

    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 0.2, 8), rng.normal(0.8, 0.5, 6)
    d = est.difference(est.mean_t(a), est.mean_t(b))
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert d.mean / d.se == pytest.approx(ref.statistic, rel=1e-12)
    assert d.df == int(ref.df)


def test_wilson_estimates():
    from statsmodels.stats.proportion import proportion_confint

    w = est.wilson(14, 17)
    lo, hi = proportion_confint(14, 17, method="wilson")
    assert (w["low"], w["high"]) == pytest.approx((lo, hi), rel=1e-9)
    assert est.wilson(0, 0)["undefined"]


# ---------------------------------------------------------------------------------------------
# The lifted energy F^Sym (geometry paper)


def test_fourier_densities_against_scipy_and_direct_convolution():
    from scipy import stats

    d = le.densities(kappa=6.0, weight=0.7, shift=0.6, sigma=0.3, grid=2048, taus=(0.2,))
    th = d["theta"]
    ref1 = 0.7 * stats.vonmises.pdf(th, 6.0) + 0.3 * stats.vonmises.pdf(th, 6.0, loc=np.pi)
    assert np.allclose(d["rho1"], ref1, atol=1e-12)
    for r in (d["rho1"], d["rho2"], *d["smoothed"][0.2]):
        assert le._integral(r) == pytest.approx(1.0, abs=1e-12) and r.min() > 0
    # ρ̃₂ = ρ₂ ⊛ e^{cos φ/τ}/V by a direct circular convolution on the grid
    ker = np.exp((np.cos(th) - 1) / 0.2)
    ker /= le._integral(ker)
    conv = np.real(np.fft.ifft(np.fft.fft(d["rho2"]) * np.fft.fft(ker))) * 2 * np.pi / th.size
    assert np.allclose(d["smoothed"][0.2][1], conv, atol=1e-10)
    # ρ₂ is the law of θ₁ + δ + σε: its mean resultant is ρ₁'s times e^{iδ}·e^{−σ²/2}
    m1 = np.sum(d["rho1"] * np.exp(1j * th)) * 2 * np.pi / th.size
    m2 = np.sum(d["rho2"] * np.exp(1j * th)) * 2 * np.pi / th.size
    assert m2 == pytest.approx(m1 * np.exp(0.6j - 0.045), abs=1e-12)


def test_entropy_and_kl_of_von_mises_against_closed_forms():
    from scipy import special, stats

    k = np.arange(1025)
    a = special.ive(1, 4.0) / special.ive(0, 4.0)
    th = 2 * np.pi * np.arange(2048) / 2048
    p = stats.vonmises.pdf(th, 4.0)
    q = stats.vonmises.pdf(th, 4.0, loc=0.8)
    assert le.entropy(p) == pytest.approx(float(stats.vonmises(4.0).entropy()), abs=1e-10)
    # KL(vM(0, κ) ‖ vM(δ, κ)) = κ·A(κ)·(1 − cos δ)
    assert le.kl(p, q) == pytest.approx(4.0 * a * (1 - math.cos(0.8)), abs=1e-10)
    assert k.size  # the grid holds the series' resolution


def test_lifted_energy_monte_carlo_agrees_and_needs_the_coupling():
    r = le.run_lifted_energy(**section(
        "lifted_energy", taus=(0.2,), quadrature_taus=(0.5, 0.2, 0.05, 0.01), ns=(128, 1024),
        replicates=4, grid=2048))
    (mc,) = r["monte_carlo"]
    big = mc["by_n"][-1]
    gap = big["minus_smoothed"]
    assert gap["low"] < 0 < gap["high"] or abs(gap["value"]) < 0.02
    assert abs(gap["value"]) < 0.03
    # dropping −½[KL + KL] misses by the whole coupling term, far outside the Monte-Carlo error
    assert big["minus_no_coupling"]["high"] < -0.3
    c = big["coupling_coefficient"]
    assert 0.45 < c["value"] < 0.55
    errs = [abs(q["lifting_error"]) for q in r["quadrature"]]
    assert all(b < a for a, b in zip(errs[:-1], errs[1:], strict=True)) and errs[-1] < 0.05


def test_the_covariance_decays_like_the_margin_not_like_one_over_beta():
    # A unique best candidate leading by the margin m: Cov ≈ p₂(1 − p₂)·|Δ∇s|² with
    # p₂ ∝ e^{−βm}, so from β₁ to 2β₁ it falls by e^{−β₁m}: slope −β₁m/ln 2. A tie: constant.
    cfg = hs.random_configs(1, rng=np.random.default_rng(3))[0]
    m = hs.top2_margin(cfg.z, cfg.pairs)
    beta1 = 30.0 / m  # the study's β₁: concentrated to e^{−30}
    assert hs.covariance_slope(cfg, beta1) == pytest.approx(-beta1 * m / np.log(2), rel=0.02)
    assert hs.covariance_slope(hs.s1_trap(), 200.0) == pytest.approx(0.0, abs=1e-9)
