"""S1 (InfoNCE on (S¹)^4): the angle-space landscape against the unit-vector one, the clocked
Langevin integrator with a stiffness-controlled step, the run end to end at a small size, and the
experiment registry behind the simulate stage."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from scipy import stats

from infonce_lab.params import S1Config
from infonce_lab.schedules import BetaGrowth, Fixed, LogAnneal
from infonce_lab.simulation.circle import (
    CircleInfoNCE,
    circle_pairs,
    interleaved_trap,
    quench,
    s1_model,
)
from infonce_lab.simulation.double_well import double_well_gibbs_bin_probs, double_well_loss_grad
from infonce_lab.simulation.landscape import infonce_grad, infonce_loss, s1_angles_to_z, u0
from infonce_lab.simulation.langevin import (
    StepRule,
    clocked_langevin,
    langevin,
    stiffness_rule,
)
from infonce_lab.simulation.s1 import (
    _schedules,
    _vectorised_betas,
    check_times,
    proportion_difference,
    run_s1,
    sqrt_outrunning,
)
from references import s1_quench
from sim_params import section


# ------------------------------------------------------------------------ angle-space landscape
def _angle_grad_from_unit_vectors(z_grad: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Chain rule: ∂L/∂θ_i = ∂L/∂z_i · (−sin θ_i, cos θ_i)."""
    return z_grad[..., 0] * -np.sin(theta) + z_grad[..., 1] * np.cos(theta)


@pytest.mark.parametrize(("n_pairs", "kappa"), [(2, 1.0), (2, 1.7), (3, 0.6)])
@pytest.mark.parametrize("beta", [0.5, 30.0, 400.0])  # 400·κ > 350: the per-row-max path
def test_circle_loss_grad_u0_match_unit_vector_landscape(n_pairs, kappa, beta):
    model = CircleInfoNCE(2 * n_pairs, circle_pairs(n_pairs), kappa)
    rng = np.random.default_rng(3)
    theta = rng.uniform(0, 2 * np.pi, (6, 5, 2 * n_pairs))
    z = s1_angles_to_z(theta)
    np.testing.assert_allclose(model.loss(theta, beta), infonce_loss(z, model.pairs, beta, kappa),
                               rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(model.u0(theta), u0(z, model.pairs, kappa), atol=1e-14)
    ref = _angle_grad_from_unit_vectors(infonce_grad(z, model.pairs, beta, kappa), theta)
    np.testing.assert_allclose(model.grad(theta, beta), ref, rtol=1e-10, atol=1e-10 * beta)


def test_circle_grad_per_configuration_beta_and_fast_trig():
    model = s1_model()
    rng = np.random.default_rng(4)
    theta = rng.uniform(0, 2 * np.pi, (7, 9, 4))
    beta = rng.uniform(1.0, 80.0, (7, 9))
    ref = _angle_grad_from_unit_vectors(
        infonce_grad(s1_angles_to_z(theta), model.pairs, beta[..., None, None]), theta)
    np.testing.assert_allclose(model.grad(theta, beta), ref, atol=1e-11)
    # float32 trigonometry (the integrator's): relative error ~1e-7 of the gradient's scale βκ_s
    fast = model.grad_cm(np.ascontiguousarray(np.moveaxis(theta, -1, 0)), beta, fast_trig=True)
    assert np.abs(np.moveaxis(fast, 0, -1) - ref).max() < 1e-6 * beta.max()


def test_circle_grad_central_differences_and_hessian_at_trap():
    model = CircleInfoNCE(6, circle_pairs(3), 1.3)
    theta = np.random.default_rng(5).uniform(0, 2 * np.pi, 6)
    eps, beta = 1e-6, 7.0
    fd = [(model.loss(theta + eps * e, beta) - model.loss(theta - eps * e, beta)) / (2 * eps)
          for e in np.eye(6)]
    np.testing.assert_allclose(model.grad(theta, beta), fd, rtol=1e-6, atol=1e-7)
    # At the interleaved trap the largest curvature of L is κ_s²β² (the step rule's premise).
    trap = s1_model(1.5)
    for b in (10.0, 40.0):
        lam = np.linalg.eigvalsh(trap.hessian_fd(interleaved_trap(2), b))[-1]
        assert lam == pytest.approx(1.5**2 * b**2, rel=1e-4)


def test_interleaved_trap_and_brackets():
    np.testing.assert_allclose(interleaved_trap(2), np.deg2rad([0, 180, 90, 270]))
    model = s1_model(2.0)
    assert model.u0(interleaved_trap(2)) == pytest.approx(2.0)  # U_0 = κ_s at the trap
    theta = np.deg2rad([0.0, 10.0, 120.0, 130.0])
    assert model.u0(theta) == 0.0
    assert np.all(model.brackets(theta) < 0)  # every positive is its anchor's unique maximum
    np.testing.assert_allclose(model.positive_sims(theta), 2.0 * np.cos(np.deg2rad(10.0)))


def test_angle_quench_agrees_with_unit_vector_quench():
    rng = np.random.default_rng(6)
    theta = np.concatenate([interleaved_trap(2) + rng.normal(0, 0.3, (150, 4)),
                            rng.uniform(0, 2 * np.pi, (150, 4))])
    ours = quench(s1_model(), theta, 20.0)
    ref = s1_quench(theta, 20.0)
    assert ours.converged.all()
    np.testing.assert_array_equal(ours.is_global, ref.is_global)
    # The integrator's labels use a 4× larger step (0.8/(β̄κ²)); they can only differ next to a
    # separatrix.
    fast = quench(s1_model(), theta, 20.0, step=0.04)
    assert np.mean(fast.is_global == ref.is_global) >= 0.98
    assert 0.1 < ref.is_global.mean() < 0.9  # both basins are sampled


# ---------------------------------------------------------------------------- step rule, clock
def test_step_rule():
    r = stiffness_rule("P1", 0.01, 0.5, kappa_s=2.0)
    assert r.dt(1.0) == 0.01 and r.dt(10.0) == pytest.approx(0.5 / (4 * 100))
    assert stiffness_rule("P2", 0.01, 0.4).dt(80.0) == pytest.approx(0.005)
    assert r.halved().dt(10.0) == pytest.approx(r.dt(10.0) / 2)
    assert r.halved().dt_max == 0.005
    assert StepRule(0.01).dt(1e6) == 0.01
    assert StepRule(0.25).steps(lambda t: 1.0, 0.0, 1.0) == 4
    assert StepRule(0.3).steps(lambda t: 1.0, 0.0, 1.0) == 4  # the last step is shortened
    with pytest.raises(ValueError):
        StepRule(0.0)


def test_clocked_groups_keep_their_own_clocks():
    model = s1_model()
    theta = np.tile(interleaved_trap(2), (6, 1))
    rules = [StepRule(0.1), StepRule(0.03), stiffness_rule("P1", 0.1, 1.0)]
    res = clocked_langevin(lambda th, b: model.grad_cm(th, b), theta,
                           [lambda t: 2.0, lambda t: 2.0, lambda t: 5.0], 0.5, 1.5, rules,
                           ["P2", "P2", "P1"], space="angles", rng=0)
    # 1.0 time unit: 10 steps of 0.1, 34 of 0.03 (the last shortened), 25 of 1/25
    assert res.steps.tolist() == [10, 34, 25]
    assert res.x.shape == theta.shape and np.all(np.isfinite(res.x))
    with pytest.raises(ValueError, match="split evenly"):
        clocked_langevin(lambda th, b: model.grad_cm(th, b), theta[:5], [lambda t: 1.0] * 3,
                         0.0, 1.0, rules, ["P2"] * 3, space="angles")


@pytest.mark.parametrize("scheme", ["projected", "expmap"])
@pytest.mark.parametrize("dynamics", ["P1", "P2"])
def test_clocked_sphere_fixed_step_is_langevin(scheme, dynamics):
    """With a fixed step the clocked integrator is :func:`langevin`, draw for draw."""
    grad = partial(double_well_loss_grad, a=0.5)
    rng = np.random.default_rng(0)
    th = rng.uniform(-np.pi, np.pi, 64)
    z0 = np.stack([np.cos(th), np.sin(th)], -1)[:, None, :]
    scheds = [Fixed(0.5), Fixed(0.25)]
    ref = langevin(grad, z0, scheds, 50, 0.01, dynamics, scheme, rng=3)
    out = clocked_langevin(grad, z0, [lambda t: 2.0, lambda t: 4.0], 0.0, 0.5,
                           [StepRule(0.01)] * 2, [dynamics] * 2, scheme=scheme, rng=3)
    np.testing.assert_allclose(out.x, ref.z, atol=1e-12)


def _double_well_angles(theta: np.ndarray, beta: np.ndarray, a: float = 0.5) -> np.ndarray:
    """∂L/∂θ of L = β·U, U = −cos 2θ − a·cos θ, particle-major (1, G, R)."""
    return beta * (2.0 * np.sin(2.0 * theta) + a * np.sin(theta))


@pytest.mark.parametrize(("dynamics", "beta"), [("P2", 1.0), ("P1", 1.2)])
def test_clocked_stationary_law_is_gibbs(dynamics, beta):
    """Angle-space chains with the stiffness rule, histogrammed once each against the Gibbs law
    ∝ exp(−β_eff·U) (β_eff = β for P2, β² for P1; our P1/P2 analysis), as test_sim_langevin does for
    the fixed-step integrator; the wrong law is rejected. The rule binds (dt ≈ 0.009 < dt_max)."""
    rng = np.random.default_rng(7)
    chains = 8_000
    theta0 = rng.uniform(-np.pi, np.pi, (chains, 1))
    rule = stiffness_rule(dynamics, 0.01, 0.03 if dynamics == "P1" else 0.02, kappa_s=1.5)
    assert rule.dt(beta) < 0.0095
    out = clocked_langevin(_double_well_angles, theta0, [lambda t: beta], 0.0, 30.0, [rule],
                           [dynamics], space="angles", rng=11)
    angles = np.angle(np.exp(1j * out.x[:, 0]))
    edges = np.linspace(-np.pi, np.pi, 37)
    observed, _ = np.histogram(angles, edges)
    beta_eff = beta if dynamics == "P2" else beta**2
    assert stats.chisquare(observed, chains * double_well_gibbs_bin_probs(edges, beta_eff, 0.5)
                           ).pvalue > 1e-3
    wrong = 1.5 * beta_eff
    assert stats.chisquare(observed, chains * double_well_gibbs_bin_probs(edges, wrong, 0.5)
                           ).pvalue < 1e-6


def test_fixed_step_empties_the_trap_numerically_and_the_rule_does_not():
    """The artefact behind the old S1 verdict: P1 at β = 40 (β²ΔE = 100, no physical escape)
    with dt = 0.01 (dt·λ_max = 16 ≫ 2) leaves the trap; at dt = h/β² it stays."""
    model = s1_model()
    theta = interleaved_trap(2) + 0.05 * np.random.default_rng(8).standard_normal((100, 4))

    def trapped_after(rule: StepRule) -> float:
        out = clocked_langevin(lambda th, b: model.grad_cm(th, b), theta, [lambda t: 40.0],
                               0.0, 1.0, [rule], ["P1"], space="angles", rng=1)
        return float(np.mean(~quench(model, out.x, 20.0, step=0.04).is_global))

    assert trapped_after(StepRule(0.01)) < 0.2
    assert trapped_after(stiffness_rule("P1", 0.01, 0.5)) == 1.0


@pytest.mark.parametrize("c, K, horizon", [(32.0, math.e, 100.0), (5.0, 2.0, 3.0),
                                            (1.0, math.e, 1e4)])
def test_the_sqrt_schedule_is_the_slowest_at_or_above_the_log_one(c, K, horizon):
    s = sqrt_outrunning(c, K, horizon)
    t = np.concatenate([np.geomspace(1e-8, horizon, 200_001), [0.0]])
    ratio = (s.beta0 + s.rate * np.sqrt(t)) / (c * np.log(t + K))
    assert ratio.min() >= 1.0 and s.beta0 == pytest.approx(c * math.log(K))
    # the slowest: it touches the log schedule inside (0, horizon], so any smaller r falls below
    inner = t > 0
    need = c * (np.log(t[inner] + K) - math.log(K)) / np.sqrt(t[inner])
    assert need.max() == pytest.approx(s.rate, rel=1e-6)


def test_vectorised_betas_are_the_schedules():
    scheds = list(_schedules(16.0, math.e, (0.5, 2.0), 2.0, 100.0).values())
    scheds.append(BetaGrowth("sqrt", 3.0, 2.0, 1.0, 50.0))
    scheds.append(LogAnneal(c=0.1, K=1.5, time_per_step=1.0, tau_max=2.0))  # τ_max binds
    beta = _vectorised_betas(scheds)
    groups = np.arange(len(scheds))
    for t in (0.0, 0.37, 5.0, 1e3):
        np.testing.assert_allclose(beta(np.full(len(scheds), t), groups),
                                   [1.0 / s.tau(t) for s in scheds], rtol=1e-13)
    assert scheds[2].beta0 == 32.0  # √t starts with the c = 2c* log schedule (K = e)


# ---------------------------------------------------------------------------------- the run
def test_check_times_and_difference_interval():
    assert check_times(100.0, 0.1, extra=[5.0, 7.0]) == [0.1, 0.2, 0.5, 1, 2, 5, 7, 10, 20, 50, 100]
    assert check_times(3.0, 1.0) == [1.0, 2.0, 3.0]
    d = proportion_difference(200, 200, 0, 200)
    assert d["value"] == 1.0 and 0.95 < d["low"] < 1.0 and d["high"] == pytest.approx(1.0)
    d = proportion_difference(0, 200, 0, 200)
    assert d["low"] < 0 < d["high"]


def test_s1_small_run():
    res = run_s1(**section(
        "s1", grid=32, chains=30, horizon=2.0, horizon_p1=0.5, hold_after=0.5, first_check=0.5,
        c_ratios=(0.5, 2.0), h_p1=1.0))
    assert res["barrier"]["c_star"] == pytest.approx(16.0, rel=0.1)  # 32³: ~5%
    assert res["barrier"]["trap_u0"] == pytest.approx(1.0)
    assert res["check_times"] == [0.5, 1.0, 2.0]
    for key in ("dynamics", "half_step"):
        for dyn, end in (("P2", 2.0), ("P1", 0.5)):
            rows = res[key][dyn]
            assert [c["name"] for c in rows] == ["log c/c*=0.5", "log c/c*=2", "sqrt"]
            for c in rows:
                assert c["t"][0] == 0.0 and c["t"][-1] == end
                assert c["p_trap"][0] == 1.0  # every chain starts in the trap basin
                lo, hi = c["p_trap_end_ci"]
                assert lo <= c["p_trap_end"] <= hi
                assert all(s <= p + 1e-12 for s, p in zip(c["p_surv"], c["p_trap"], strict=True))
    conv = res["convergence"]
    assert conv["dt_max_half"] == conv["dt_max"] / 2 and conv["h_half"]["P1"] == 0.5
    steps = conv["steps"]
    for dyn in ("P1", "P2"):
        for s in ("log c/c*=0.5", "log c/c*=2", "sqrt"):
            assert steps[f"{dyn}|{s}|half_step"] in (2 * steps[f"{dyn}|{s}|step"] - 1,
                                                     2 * steps[f"{dyn}|{s}|step"],
                                                     2 * steps[f"{dyn}|{s}|step"] + 1)
    assert set(res["p1_minus_p2"]) == {"log c/c*=0.5", "log c/c*=2", "sqrt"}
    for entry in res["p1_minus_p2"].values():
        for r in ("step", "half_step"):
            e = entry[r]
            assert e["low"] <= e["value"] <= e["high"] and e["method"].startswith("newcombe")
    g = res["p2_vs_gibbs"]["log c/c*=2"]
    assert 0 <= g["gibbs_trap_mass"] < 1e-6 and g["c_ratio"] == 2.0
    assert g["step"]["value"] == pytest.approx(g["p_trap_step"]["value"] - g["gibbs_trap_mass"])


def test_gibbs_trap_mass_grows_as_beta_falls():
    from infonce_lab.simulation.barriers import s1_barrier
    from infonce_lab.simulation.s1 import gibbs_trap_mass

    bar = s1_barrier(32, 20.0)
    model = s1_model()
    ang = bar.f_result.minima_index * (2 * np.pi / 32)
    trap = (model.u0(np.c_[np.zeros(len(ang)), ang]) > 1e-6)[bar.f_result.labels]
    masses = [gibbs_trap_mass(b, trap, 1.0) for b in (0.01, 2.0, 10.0)]
    assert masses[0] == pytest.approx(trap.mean(), rel=0.02)  # β → 0: the basins' volume
    assert masses[0] > masses[1] > masses[2] > 0


def test_s1_config_checks_horizons():
    with pytest.raises(ValueError, match="hold_after"):
        S1Config(horizon_p1=4.0, hold_after=5.0)
    with pytest.raises(ValueError, match="first_check"):
        S1Config(horizon=5.0, horizon_p1=10.0, hold_after=1.0, first_check=6.0)
    S1Config(horizon=5.0, horizon_p1=10.0, hold_after=1.0)  # P1 may run longer than P2


def test_the_p1_crossings_bound_in_closed_form():
    from infonce_lab.simulation.s1 import p1_crossings_bound

    beta, de, kappa, chains = 30.0, 0.0625, 1.5, 200
    const = lambda t: np.full(np.shape(t), beta)  # noqa: E731
    want = chains * 7.0 * kappa**2 * beta**2 * np.exp(-beta**2 * (de - np.log(3) / beta))
    assert p1_crossings_bound(const, 3.0, 10.0, de, kappa, chains) == pytest.approx(want, rel=1e-9)
    assert p1_crossings_bound(const, 3.0, 3.0, de, kappa, chains) == 0.0
    # no barrier left once ln(3)/β reaches ΔE: nothing bounds the crossings
    assert p1_crossings_bound(lambda t: np.full(np.shape(t), 10.0), 0.0, 1.0, de, kappa,
                              chains) == np.inf
    # a growing β only lowers the bound (a later hold can only be safer)
    grow = lambda t: beta + np.asarray(t)  # noqa: E731
    assert p1_crossings_bound(grow, 3.0, 10.0, de, kappa, chains) < want


def test_a_cold_p1_setting_is_held_and_keeps_its_labels():
    """c = 2c* under P1: β ≥ 32 from t = 0, so the bound holds at the first check after
    hold_after; the chains stop and every later check repeats the held counts."""
    res = run_s1(**section(
        "s1", grid=32, chains=30, horizon=2.0, horizon_p1=20.0, hold_after=0.5, first_check=0.5,
        c_ratios=(2.0,), h_p1=1.0))
    held = res["hold"]["held_at"]
    for r in ("step", "half_step"):
        assert held[f"P1|log c/c*=2|{r}"] == 0.5 and held[f"P2|log c/c*=2|{r}"] is None
        assert res["hold"]["bound_at_hold"][f"P1|log c/c*=2|{r}"] < res["hold"]["crossings"]
    curve = res["dynamics"]["P1"][0]
    assert curve["t"][-1] == 20.0
    i = curve["t"].index(0.5)
    assert len(set(curve["p_trap"][i:])) == 1 and len(set(curve["p_surv"][i:])) == 1
    g = res["p1_vs_gibbs"]["log c/c*=2"]
    assert g["t"] == 20.0 and g["held_at_step"] == 0.5
    # held from 0.5: its steps are those of a run to 0.5, not to 20
    short = run_s1(**section(
        "s1", grid=32, chains=30, horizon=2.0, horizon_p1=0.5, hold_after=0.5, first_check=0.5,
        c_ratios=(2.0,), h_p1=1.0))
    assert (res["convergence"]["steps"]["P1|log c/c*=2|step"]
            == short["convergence"]["steps"]["P1|log c/c*=2|step"])


def test_the_p1_law_is_colder_than_p2s_at_the_same_beta():
    from infonce_lab.simulation.barriers import s1_barrier
    from infonce_lab.simulation.s1 import gibbs_trap_mass

    bar = s1_barrier(32, 20.0)
    model = s1_model()
    ang = bar.f_result.minima_index * (2 * np.pi / 32)
    trap = (model.u0(np.c_[np.zeros(len(ang)), ang]) > 1e-6)[bar.f_result.labels]
    # exp(−β²F_β) at β = 2 is exp(−4·F_2): below P2's exp(−2·F_2) trap mass
    assert gibbs_trap_mass(2.0, trap, 1.0, dynamics="P1") < gibbs_trap_mass(2.0, trap, 1.0)
    assert gibbs_trap_mass(1.0, trap, 1.0, dynamics="P1") == pytest.approx(
        gibbs_trap_mass(1.0, trap, 1.0))
    with pytest.raises(ValueError, match="dynamics"):
        gibbs_trap_mass(1.0, trap, 1.0, dynamics="P3")
