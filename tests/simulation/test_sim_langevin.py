"""Langevin simulator on spheres, the S0 double well and the trapping estimators (annealing
paper)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from scipy import integrate, stats

from infonce_lab.schedules import Fixed
from infonce_lab.simulation.double_well import (
    double_well_barrier,
    double_well_energy_theta,
    double_well_gibbs_bin_probs,
    double_well_grad,
    double_well_loss_grad,
    double_well_trap_start,
)
from infonce_lab.simulation.langevin import langevin
from infonce_lab.simulation.trapping import wilson_interval
from references import (
    double_well_energy,
    escape_hazard_fit,
    in_trap_basin,
    trap_exponent,
    trap_probability,
)

A = 0.5
GRAD = partial(double_well_loss_grad, a=A)


def _circle(theta: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)[:, None, :]


def _angles(z: np.ndarray) -> np.ndarray:
    return np.arctan2(z[:, 0, 1], z[:, 0, 0])


# ----------------------------------------------------------------------------- stationary law
@pytest.mark.parametrize(
    ("scheme", "dynamics", "beta"),
    [("projected", "P2", 1.0), ("expmap", "P2", 1.0), ("projected", "P1", 0.8)],
)
def test_stationary_law_is_gibbs(scheme, dynamics, beta):
    """Chains started uniformly on S¹ and run for 30 time units (≈ 6 relaxation times of the
    well populations at β = 1; 15 left a 3σ excess in the trap with 5·10⁴ chains) are histogrammed
    once each (independent samples) against ∝ exp(−β_eff·U): β_eff = β for P2, β² for P1
    (L = β·U; our P1/P2 analysis). dt = 5e-3 keeps the O(dt) bias of the invariant law below what
    these samples resolve (at dt = 1e-2 the projected scheme's bias shows with 10⁵ samples)."""
    rng = np.random.default_rng(7)
    chains, dt = 8_000, 5e-3
    z0 = _circle(rng.uniform(-np.pi, np.pi, chains))
    out = langevin(GRAD, z0, Fixed(1.0 / beta), round(30.0 / dt), dt, dynamics, scheme, rng=11)
    edges = np.linspace(-np.pi, np.pi, 37)
    observed, _ = np.histogram(_angles(out.z), edges)
    beta_eff = beta if dynamics == "P2" else beta**2
    expected = chains * double_well_gibbs_bin_probs(edges, beta_eff, A)
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # The test has power: the law of the other dynamics is rejected outright.
    wrong = 1.5 * beta if dynamics == "P2" else beta
    assert stats.chisquare(observed, chains * double_well_gibbs_bin_probs(edges, wrong, A)).pvalue < 1e-6


# ------------------------------------------------------------------------ geometry and drift
def _quadratic_grad(z: np.ndarray, beta, m: np.ndarray) -> np.ndarray:
    """∇ of L = β·Σ_i z_iᵀ M z_i / 2 (a smooth potential on (S²)^particles)."""
    return beta * (z @ m)


@pytest.mark.parametrize("scheme", ["projected", "expmap"])
@pytest.mark.parametrize("dynamics", ["P1", "P2"])
def test_states_stay_on_spheres(scheme, dynamics):
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 3))
    z0 = rng.standard_normal((64, 5, 3)) * 3.0  # not normalised: langevin projects it first
    out = langevin(partial(_quadratic_grad, m=m + m.T), z0, Fixed(0.5), 500, 1e-2, dynamics,
                   scheme, rng=1, record_every=100)
    assert out.z.shape == z0.shape
    assert out.records.shape == (6, 64, 5, 3)
    np.testing.assert_allclose(out.times, np.arange(6) * 1.0)
    np.testing.assert_allclose(np.linalg.norm(out.records, axis=-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("scheme", ["projected", "expmap"])
def test_zero_temperature_limit_is_gradient_flow(scheme):
    """P2 at β → ∞ is the gradient flow dθ/dt = −U′(θ) (drift −grad U, no noise): the sign and
    scale of the drift and the tangent projection."""
    theta0 = np.linspace(-3.0, 3.0, 13)
    out = langevin(GRAD, _circle(theta0), Fixed(1e-14), 200, 1e-3, "P2", scheme, rng=0)

    def flow(_t, th):
        return -(2.0 * np.sin(2.0 * th) + A * np.sin(th))

    exact = integrate.solve_ivp(flow, (0.0, 0.2), theta0, rtol=1e-10, atol=1e-12).y[:, -1]
    np.testing.assert_allclose(_angles(out.z), exact, atol=1e-3)  # Euler: O(dt) = 1e-3


def test_one_vectorised_call_per_step():
    """No Python loop over chains or particles: potential_grad is called once per step with the
    whole batch, also when several schedules share a run (chains split into blocks)."""
    seen: list[tuple[tuple[int, ...], object]] = []

    def grad(z, beta):
        seen.append((z.shape, np.shape(beta)))
        return double_well_loss_grad(z, beta, A)

    z0 = double_well_trap_start(300, rng=0)
    langevin(grad, z0, Fixed(1.0), 7, 1e-2, rng=0)
    assert seen == [((300, 1, 2), ())] * 7
    seen.clear()
    out = langevin(grad, z0, [Fixed(1.0), Fixed(1e-14), Fixed(2.0)], 7, 1e-2, rng=0)
    assert seen == [((3, 100, 1, 2), (3, 1, 1, 1))] * 7
    # Block 2 ran at τ = 1e-14 (β huge): no noise, so it only drifted towards θ = π.
    assert np.all(np.abs(_angles(out.z[100:200])) >= np.abs(_angles(z0[100:200])) - 1e-12)


# ---------------------------------------------------------------------------- double well
@pytest.mark.parametrize("a", [0.1, 0.5, 1.0, 2.5])
def test_barrier_closed_form_matches_grid(a):
    """ΔE of the trap: the lower of the two passes (max of U on each arc from π to 0) minus U(π)."""
    bar = double_well_barrier(a)
    upper = np.linspace(0.0, np.pi, 2_000_001)  # the arc through θ = π/2; the other is its mirror
    u = double_well_energy_theta(upper, a)
    grid_barrier = min(u.max(), double_well_energy_theta(-upper, a).max()) - u[-1]
    assert bar.delta_e == pytest.approx(grid_barrier, abs=1e-9)
    assert bar.c_star == pytest.approx(1.0 / grid_barrier, rel=1e-9)
    assert bar.theta_saddle == pytest.approx(upper[u.argmax()], abs=1e-5)
    assert u[0] == pytest.approx(bar.u_global) and u[-1] == pytest.approx(bar.u_trap)
    if a == 0.5:
        assert bar.delta_e == pytest.approx(1.53125) and bar.c_star == pytest.approx(1 / 1.53125)


def test_energy_gradient_and_basin_label():
    rng = np.random.default_rng(3)
    theta = rng.uniform(-np.pi, np.pi, 2000)
    z = _circle(theta)[:, 0]
    np.testing.assert_allclose(double_well_energy(z, A), double_well_energy_theta(theta, A))
    # Tangential component of the ambient gradient = dU/dθ.
    dudtheta = np.einsum("ni,ni->n", double_well_grad(z, A), np.stack([-z[:, 1], z[:, 0]], -1))
    np.testing.assert_allclose(dudtheta, 2 * np.sin(2 * theta) + A * np.sin(theta), atol=1e-12)
    # The label is the quench: plain gradient descent in θ ends near π iff labelled trap.
    th = theta.copy()
    for _ in range(3000):  # over descent iterations, all points at once
        th -= 0.01 * (2 * np.sin(2 * th) + A * np.sin(th))
    ends_at_pi = np.cos(th) < 0
    clear = np.abs(np.abs(theta) - double_well_barrier(A).theta_saddle) > 1e-3
    np.testing.assert_array_equal(in_trap_basin(z, A)[clear], ends_at_pi[clear])


def test_trap_start():
    z0 = double_well_trap_start(5000, angle_sd=0.05, rng=1)
    assert z0.shape == (5000, 1, 2)
    dev = np.angle(-(z0[:, 0, 0] + 1j * z0[:, 0, 1]))
    assert abs(dev.std() - 0.05) < 0.003 and in_trap_basin(z0, A).all()


# -------------------------------------------------------------------------------- trapping
def test_wilson_matches_scipy():
    k = np.array([0, 1, 5, 37, 50, 99, 100, 0, 3, 1234])
    n = np.array([100, 100, 100, 100, 100, 100, 100, 7, 7, 4000])
    for level in (0.95, 0.8):
        lo, hi = wilson_interval(k, n, level)
        for i in range(k.size):
            ci = stats.binomtest(int(k[i]), int(n[i])).proportion_ci(level, method="wilson")
            assert lo[i] == pytest.approx(ci.low, abs=1e-12)
            assert hi[i] == pytest.approx(ci.high, abs=1e-12)


@pytest.mark.parametrize("gamma", [0.2, 0.5, 0.75])
def test_trap_exponent_recovers_known_exponent(gamma):
    K, n = math.e, 4000
    t = np.concatenate([[0.0], np.geomspace(0.1, 1e3, 120)])
    p = np.exp(-0.3 * (t + K) ** gamma)
    fit = trap_exponent(t, p, K)
    assert fit.exponent == pytest.approx(gamma, abs=1e-9)
    # With binomial noise of n chains, and points outside [min_count, n − min_count] dropped.
    k = np.random.default_rng(0).binomial(n, p)
    noisy = trap_exponent(t, k / n, K, n=n)
    assert noisy.exponent == pytest.approx(gamma, abs=0.05)
    # The integrated-rate form (start term subtracted) is recovered by method="integrated".
    p_int = np.exp(-0.3 * ((t + K) ** gamma - K**gamma) / gamma)
    assert trap_exponent(t, p_int, K, method="integrated").exponent == pytest.approx(gamma, abs=1e-4)
    assert trap_exponent(t[:3], p[:3], K) is None  # too few usable points


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.5])
def test_escape_hazard_fit_recovers_rate_exponent(alpha):
    """Exit times drawn from the hazard r(t) = A·(t+K)^{−α} (inverse cumulative hazard of an
    Exp(1) draw); the fitted slope of log r vs log(t+K) is −α (= c/c* in the annealing paper's
    App. B.4)."""
    K, A, n = math.e, 1.0, 20_000
    e = np.random.default_rng(5).exponential(size=n)
    if alpha == 1.0:
        exit_t = K * np.exp(e / A) - K
    else:  # H(t) = A·((t+K)^{1−α} − K^{1−α})/(1−α); chains with e ≥ H(∞) never leave
        base = K ** (1 - alpha) + e * (1 - alpha) / A
        with np.errstate(invalid="ignore"):
            exit_t = np.where(base > 0, base ** (1 / (1 - alpha)) - K, np.inf)
    times = np.arange(0.0, 300.0, 0.1)
    k_surv = (exit_t[None, :] > times[:, None]).sum(1)
    fit = escape_hazard_fit(times, k_surv, K)
    assert fit.slope == pytest.approx(-alpha, abs=max(0.08, 3 * fit.stderr))


def test_trap_probability_limits():
    """Cold: nobody leaves the trap. Hot: occupancy relaxes to the Gibbs mass of the trap basin
    while survival (never left) falls below it and never increases."""
    z0 = double_well_trap_start(2000, rng=2)
    label = partial(lambda z, a: in_trap_basin(z, a)[:, 0], a=A)
    cold = trap_probability(GRAD, z0, label, Fixed(1 / 30.0), 300, 1e-2, rng=0)
    assert (cold.p_trap == 1).all() and (cold.p_surv == 1).all()
    hot = trap_probability(GRAD, z0, label, Fixed(1 / 0.3), 2000, 1e-2, rng=0, check_every=20)
    edges = np.array([-np.pi, -double_well_barrier(A).theta_saddle,
                      double_well_barrier(A).theta_saddle, np.pi])
    gibbs_trap = 1.0 - double_well_gibbs_bin_probs(edges, 0.3, A)[1]
    lo, hi = hot.trap_ci
    assert lo[-1] - 0.02 <= gibbs_trap <= hi[-1] + 0.02
    assert np.all(np.diff(hot.p_surv) <= 0) and np.all(hot.p_surv <= hot.p_trap)
    assert hot.times[-1] == pytest.approx(20.0) and hot.times.size == 101
