"""S0 (our test of the annealing paper): the angle integrator on S¹, the double well's closed
forms, and the estimators of ``simulation/s0.py`` — against quadrature, the generator's spectrum,
gradient flow, brute-force bookkeeping and known-answer synthetic data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy import integrate, linalg

from infonce_lab.params import S0Config
from infonce_lab.simulation.angle_langevin import run_circle
from infonce_lab.simulation.double_well import (
    double_well_barrier,
    double_well_barrier_numerical,
    double_well_curvatures,
    double_well_energy_theta,
    double_well_log_trap_mass,
    double_well_trap_mass,
    kramers_prefactor,
)
from infonce_lab.simulation.s0 import (
    _anneal_quantities,
    _arrhenius,
    _hazard_design,
    _log_trap_mass_fast,
    _stretch_of,
    _wls_slopes,
    beta_at_steps,
    run_s0,
    s0_schedules,
)
from references import escape_hazard_fit
from sim_params import section

A = 0.5


def _const(betas: list[float]):
    b = np.asarray(betas, dtype=np.float64)
    return lambda k0, k1: np.broadcast_to(b, (k1 - k0, b.size))


# ------------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("a", [0.25, 0.5, 1.0, 2.0, 3.5])
def test_numerical_barrier_matches_closed_form(a):
    num, bar = double_well_barrier_numerical(a), double_well_barrier(a)
    assert num["delta_e"] == pytest.approx(bar.delta_e, abs=1e-12)
    assert num["theta_saddle"] == pytest.approx(bar.theta_saddle, abs=1e-12)
    assert num["theta_trap"] == pytest.approx(math.pi, abs=1e-6)


def test_log_trap_mass_matches_adaptive_quadrature_and_laplace():
    betas = np.geomspace(1e-3, 150.0, 40)
    got = np.exp(double_well_log_trap_mass(betas, A))
    ts = double_well_barrier(A).theta_saddle

    def mass(b: float) -> float:  # adaptive quadrature told where each peak is
        def f(t: float) -> float:
            return math.exp(-b * (double_well_energy_theta(t, A) + 1 + A))

        kw = {"epsabs": 0.0, "epsrel": 1e-13, "limit": 200}
        trap = integrate.quad(f, ts, 2 * math.pi - ts, points=[math.pi], **kw)[0]
        glob = integrate.quad(f, -ts, ts, points=[0.0], **kw)[0]
        return trap / (trap + glob)

    np.testing.assert_allclose(got, [mass(b) for b in betas], rtol=1e-10)
    # double_well_trap_mass (quad per bin, default tolerances) agrees where it is accurate.
    np.testing.assert_allclose(got[betas < 30], [double_well_trap_mass(b, A) for b in
                                                 betas[betas < 30]], rtol=1e-7)
    # Far beyond what quad can integrate: Laplace, log π ≈ −β·(U_trap − U_global) + ½·log(U″g/U″t)
    # with a relative correction O(1/β).
    big = np.array([1e3, 1e4])
    u_g, u_t, _ = double_well_curvatures(A)
    laplace = -big * 2 * A + 0.5 * math.log(u_g / u_t)
    assert np.all(np.abs(double_well_log_trap_mass(big, A) - laplace) < 5.0 / big)
    assert isinstance(double_well_log_trap_mass(2.0, A), float)


def test_spline_of_the_log_mass_matches_the_quadrature():
    b = np.sort(np.random.default_rng(0).uniform(0.2, 120.0, 6000))
    np.testing.assert_allclose(_log_trap_mass_fast(b, A), double_well_log_trap_mass(b, A),
                               atol=1e-8, rtol=0)


def _generator_gap(beta: float, m: int = 1200) -> float:
    """Smallest non-zero eigenvalue of the P2 generator (1/β)∂²+(−U′)∂ on the circle, from its
    detailed-balance symmetrisation on a periodic grid (a finite-volume discretisation that is
    exact for the Gibbs law): the relaxation rate, escape plus return."""
    h = 2 * math.pi / m
    th = -math.pi + h * np.arange(m)
    u = double_well_energy_theta(th, A)
    um = double_well_energy_theta(th + h / 2, A)  # at the faces between i and i+1
    # Flux rates i→i+1 and back: (1/(βh²))·exp(−β(U_face − U_i)), symmetric in π-weighted form.
    k_fw = np.exp(-beta * (um - u)) / (beta * h * h)
    k_bw = np.exp(-beta * (um - np.roll(u, -1))) / (beta * h * h)
    sym = np.sqrt(k_fw * k_bw)
    diag = -(k_fw + np.roll(k_bw, 1))
    mat = np.diag(diag) + np.diag(sym[:-1], 1) + np.diag(sym[:-1], -1)
    mat[0, -1] = mat[-1, 0] = sym[-1]
    ev = np.sort(linalg.eigvalsh(mat))[::-1]
    return float(-ev[1])


def test_kramers_rate_and_its_log_slope_match_the_generator():
    bar = double_well_barrier(A)
    b1, b2 = 6.0, 9.0
    g1, g2 = _generator_gap(b1), _generator_gap(b2)
    # The return rate out of the global well is e^{−β} smaller: the gap is the escape rate.
    for b, g in ((b1, g1), (b2, g2)):
        assert g == pytest.approx(kramers_prefactor(A) * math.exp(-b * bar.delta_e), rel=0.15)
    # The hazard rule's margin rests on this: d log r/dβ = −ΔE within ≈ 1% where β·ΔE ≥ 9 …
    slope = math.log(g2 / g1) / (b2 - b1)
    assert slope == pytest.approx(-bar.delta_e, rel=0.01)
    # … and within 3% over β ∈ [2, 4] (β·ΔE from 3 to 6, the fixed-β rates of the experiment).
    slope = math.log(_generator_gap(4.0) / _generator_gap(2.0)) / 2.0
    assert slope == pytest.approx(-bar.delta_e, rel=0.03)


# --------------------------------------------------------------------------------- schedules
def test_vectorised_betas_match_the_schedules():
    bar = double_well_barrier(A)
    steps = np.r_[0, 1, 7, np.random.default_rng(1).integers(0, 300_000, 60), 200_000, 299_999]
    cfg = S0Config()
    for name, s in s0_schedules(bar.c_star, 0.05, c_ratios=cfg.c_ratios, K=cfg.K, fast=True,
                                **cfg.schedule.model_dump()).items():
        ref = np.array([1.0 / s.tau(int(k)) for k in steps])
        np.testing.assert_allclose(beta_at_steps(s, steps), ref, rtol=1e-12, err_msg=name)


# -------------------------------------------------------------------------------- integrator
@pytest.mark.parametrize(("precision", "scheme"), [(torch.float32, "em"), (torch.float64, "em"),
                                                   (torch.float32, "lm")])
def test_stationary_law_is_gibbs_for_p2_and_p1(precision, scheme):
    """P2 at β has law exp(−βU); P1 at β has exp(−β²U) (D.7(i)): time averages of the trap
    indicator from both wells against the Gibbs mass, and against the wrong law."""
    R, dt, T, burn = 256, 0.025, 600.0, 60.0
    groups = [("P2", 2.25), ("P1", 1.5)]
    theta0 = np.tile(np.where(np.arange(R) % 2 == 0, 0.0, math.pi), len(groups))
    run = run_circle(theta0, len(groups), _const([b for _, b in groups]), dt, round(T / dt), a=A,
                     p1=[d == "P1" for d, _ in groups], check_every=20, windows=[(burn, T)],
                     seed=3, dtype=precision, scheme=scheme)
    f = run.window_frac[:, 0].reshape(len(groups), R)
    pi = double_well_trap_mass(2.25, A)
    for g, (dyn, beta) in enumerate(groups):
        se = f[g].std(ddof=1) / math.sqrt(R)
        assert abs(f[g].mean() - pi) < 4 * se + 0.01, (dyn, f[g].mean(), pi)
        wrong = double_well_trap_mass(beta if dyn == "P1" else beta * beta, A)
        assert abs(f[g].mean() - wrong) > 0.05  # the test tells the two laws apart


def test_zero_noise_limit_is_the_gradient_flow():
    dt, T = 1e-3, 2.0
    theta0 = np.array([0.3, 1.0, 2.0, -2.5])
    run = run_circle(theta0, 1, _const([1e14]), dt, round(T / dt), a=A, check_every=100,
                     dtype=torch.float64)

    def rhs(_t, th):
        return -(2 * np.sin(2 * th) + A * np.sin(th))

    ref = integrate.solve_ivp(rhs, (0, T), theta0, rtol=1e-10, atol=1e-12).y[:, -1]
    ref = np.remainder(ref + math.pi, 2 * math.pi) - math.pi
    np.testing.assert_allclose(run.theta, ref, atol=5e-3)


def test_gradient_noise_heats_the_law_as_predicted():
    """The §4 recursion with an unbiased gradient error s·N(0, 1): per step the variance is
    2η/β + η²β²s², so the law is that of β_eff = β²/(1 + ηβ³s²/2) to first order in η."""
    R, eta, beta, s = 256, 0.05, 1.5, 1.5
    run = run_circle(np.where(np.arange(R) % 2 == 0, 0.0, math.pi), 1, _const([beta]), eta,
                     round(800 / eta), a=A, p1=[True], grad_noise=s, check_every=10,
                     windows=[(80.0, 800.0)], seed=5)
    m = run.window_frac[:, 0]
    heated = double_well_trap_mass(beta**2 / (1 + eta * beta**3 * s * s / 2), A)
    cold = double_well_trap_mass(beta**2, A)
    assert abs(m.mean() - heated) < 4 * m.std(ddof=1) / math.sqrt(R) + 0.01
    assert m.mean() - cold > 0.03


def test_bookkeeping_matches_the_recorded_labels():
    """Window fractions are the chains' averages over the window's checks; a chain counted in the
    trap at a check can only be a survivor if it never left; first exits are check times."""
    R, dt, ce = 64, 0.05, 4
    steps = 400 * ce
    theta0 = np.tile(math.pi + 0.05 * np.random.default_rng(0).standard_normal(R), 2)
    t_checks = np.arange(1, steps // ce + 1) * ce * dt
    win = (20.0, 60.0)
    in_w = np.flatnonzero((t_checks >= win[0] - 1e-9) & (t_checks <= win[1] + 1e-9)) + 1
    run = run_circle(theta0, 2, _const([1.0, 3.0]), dt, steps, a=A, check_every=ce,
                     windows=[win], curve_checks=in_w, seed=11)
    # Average of the per-check counts over the window = mean of the per-chain fractions.
    np.testing.assert_allclose(run.curve_counts.mean(1) / R,
                               run.window_frac[:, 0].reshape(2, R).mean(1), rtol=1e-12)
    ex = run.first_exit
    assert np.all(np.isin(ex[np.isfinite(ex)], t_checks))
    for g in range(2):
        alive = (ex[g * R:(g + 1) * R, None] > run.curve_times[None, :]).sum(0)
        assert np.all(alive <= run.curve_counts[g])


def test_noise_free_chains_and_frozen_groups():
    theta0 = np.r_[np.zeros(8), np.full(8, math.pi), np.full(8, math.pi - 0.3)]
    run = run_circle(theta0, 3, _const([1e14, 1e14, 0.5]), 0.05, 200, a=A, check_every=10,
                     windows=[(1.0, 10.0)], freeze_step=[200, 200, 0], seed=0)
    assert np.all(run.window_frac[:8] == 0) and np.all(run.first_exit[:8] == 0.0)
    assert np.all(run.window_frac[8:16] == 1) and np.all(np.isinf(run.first_exit[8:16]))
    # The third group is held from the start: it never moves, and takes no steps.
    np.testing.assert_allclose(run.theta[16:], np.float32(math.pi - 0.3), rtol=1e-6)
    assert run.chain_steps == 16 * 200


def test_escape_rates_at_fixed_beta_follow_kramers():
    R = 256
    counts = np.random.default_rng(0).multinomial(R, np.full(R, 1 / R), size=200).astype(float)
    cfg = {"betas": [2.0, 3.0], "chains": R, "horizon": 250.0, "transient": 1.0, "check_dt": 0.5}
    out = _arrhenius(cfg, A, 0.05, 4, torch.float32, "lm", counts)
    assert out["ratio"]["value"] == pytest.approx(1.0, abs=0.12)
    assert out["ratio"]["low"] < out["ratio"]["value"] < out["ratio"]["high"]
    for r in out["rates"].values():
        assert r["rate"] == pytest.approx(r["kramers"], rel=0.25)


# -------------------------------------------------------------------------------- estimators
def test_hazard_design_reproduces_escape_hazard_fit_and_a_known_exponent():
    """Exits drawn with hazard r(t) = A·(t+K)^(−α), seen at checks: the matrix form of the fit
    equals the reference escape_hazard_fit, and both recover −α."""
    rng = np.random.default_rng(7)
    n, K, alpha, amp, check = 4000, math.e, 1.5, 2.0, 0.5
    # Cumulative hazard Λ(t) = amp·((t+K)^(1−α) − K^(1−α))/(1−α); invert at Exp(1) draws.
    cap = amp * K ** (1 - alpha) / (alpha - 1)
    e = rng.exponential(size=n)
    with np.errstate(invalid="ignore"):
        t = ((K ** (1 - alpha) - e * (alpha - 1) / amp) ** (1 / (1 - alpha))) - K
    t = np.where(e < cap, t, np.inf)
    times = np.arange(1, 4001) * check
    exits = np.where(np.isfinite(t), np.ceil(t / check) * check, np.inf)
    exits[exits > times[-1]] = np.inf
    t_min = 2.0
    alive, events, exposure, x = _hazard_design(exits, times, K, t_min, 12)
    slope = float(_wls_slopes(x, events.sum(0), exposure.sum(0), alive.sum(0), 5, 20))
    t_all = np.r_[0.0, times]
    k_surv = n - np.searchsorted(np.sort(exits), t_all, side="right")
    ref = escape_hazard_fit(t_all, k_surv, K, n_bins=12, min_events=5, min_alive=20, t_min=t_min)
    assert ref is not None and slope == pytest.approx(ref.slope, abs=1e-9)
    assert slope == pytest.approx(-alpha, abs=0.15)


def _bernoulli_fracs(p: np.ndarray, n: int, checks: int, rng: np.random.Generator) -> np.ndarray:
    """Per-chain window fractions of chains that each flip independently at every check (a
    well-mixed population with window occupancies p)."""
    return rng.binomial(checks, p[None, :], size=(n, p.size)) / checks


def test_quantities_separate_tracking_from_frozen_populations():
    rng = np.random.default_rng(2)
    n, ends, K = 800, np.array([10.0, 100.0, 1000.0, 10_000.0]), math.e
    ell = np.log(ends / 10**0.5 + K)
    counts = rng.multinomial(n, np.full(n, 1 / n), size=500).astype(float)
    gibbs = np.array([0.40, 0.34, 0.27, 0.21])  # a slowly falling equilibrium (c ≈ 0.25c*)
    track = _anneal_quantities(_bernoulli_fracs(gibbs, n, 2000, rng), gibbs, ell, 0.25, counts, ends)
    assert track["follow"]["low"] > 0.8 and track["follow"]["high"] < 1.2
    assert abs(track["excess"]["value"]) < 0.02
    assert track["stretch"]["value"] == pytest.approx(_stretch_of(gibbs, ell, 0.25), abs=0.1)
    # Frozen: a fixed set of chains stays trapped whatever the equilibrium does.
    frozen_frac = np.repeat((rng.random(n) < 0.35).astype(float)[:, None], 4, axis=1)
    frozen = _anneal_quantities(frozen_frac, gibbs, ell, 1.5, counts, ends)
    assert frozen["follow"]["value"] == 0.0 and frozen["follow"]["high"] == 0.0
    assert frozen["excess"]["value"] == pytest.approx(math.log(frozen_frac[:, -1].mean() / 0.21))
    assert "stretch" not in frozen


def test_stretch_is_one_for_a_stretched_exponential_and_zero_for_a_power_law():
    ends = np.array([10.0, 100.0, 1000.0, 10_000.0])
    ell = np.log(ends + math.e)
    gamma = 0.5
    stretched = np.exp(-0.3 * np.exp(gamma * ell))
    power = np.exp(-0.4 * ell)
    # Secant slopes over unequal steps in log(t+K) leave a small offset (sinh(γΔ/2)/(γΔ/2) does
    # not cancel exactly when the decades are not equally spaced in log(t+K)).
    assert _stretch_of(stretched, ell, 1 - gamma) == pytest.approx(1.0, abs=0.01)
    assert _stretch_of(power, ell, 1 - gamma) == pytest.approx(0.0, abs=1e-9)


# ------------------------------------------------------------------------------------ the run
def test_run_s0_writes_every_verdict_quantity_at_both_steps():
    small = {"chains": 40, "horizon": 300.0}
    res = run_s0(**section(
        "s0", chains=20, horizon=120.0, c_ratios=(0.5, 2.0), bootstrap=100, curve_points=10,
        schedule={"cosine_horizons": [10.0]}, ergodicity=small | {"burn_in": 30.0},
        sgd=small | {"burn_in": 30.0, "eta": 0.2}, arrhenius={"chains": 20, "horizon": 60.0},
        workers=2))
    json.dumps(res)  # JSON-ready
    assert res["convergence"] == {"dt": 0.05, "dt_half": 0.025}
    assert res["window_ends"] == [12.0, 120.0]  # decades with ≥ 4 checks
    for name, e in res["schedules"].items():
        for q in ("occupancy", "excess", "follow", "curve"):
            assert set(e[q]) == {"step", "half_step"}, (name, q)
        if e["kind"] == "log":
            assert set(e["hazard"]) == {"step", "half_step"}
    assert "stretch" in res["schedules"]["log_c0.5"] and "stretch" not in res["schedules"]["log_c2"]
    est = res["schedules"]["log_c2"]["excess"]["step"]
    assert {"value", "low", "high", "level", "method", "n"} <= set(est)
    for c in res["ergodicity"]["cases"].values():
        assert set(c["difference"]) == {"step", "half_step"} and "t" in c["difference"]["step"]
    assert set(res["sgd"]["limit"]) == {"step", "half_step"}
    assert set(res["arrhenius"]["ratio"]) == {"step", "half_step"}
    cost = res["chain_steps"]
    assert cost["total"] == sum(cost[k] for k in ("annealing_step", "annealing_half_step",
                                                  "ergodicity", "arrhenius", "sgd"))
    # The half step takes twice the steps of the step run (no schedule freezes at these β... but
    # geometric and linear do: at most twice).
    assert cost["annealing_step"] < cost["annealing_half_step"] <= 2 * cost["annealing_step"] + 1


def test_one_worker_or_two_give_the_same_numbers():
    kw = {"chains": 10, "horizon": 30.0, "c_ratios": (2.0,), "fast": False, "bootstrap": 100,
          "curve_points": 5, "ergodicity": {"chains": 8, "horizon": 40.0, "burn_in": 10.0},
          "sgd": {"chains": 8, "horizon": 40.0, "burn_in": 10.0, "eta": 0.2},
          "arrhenius": {"chains": 10, "horizon": 20.0}}
    one, two = run_s0(**section("s0", workers=1, **kw)), run_s0(**section("s0", workers=2, **kw))
    one.pop("cpu_seconds"), two.pop("cpu_seconds")
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
