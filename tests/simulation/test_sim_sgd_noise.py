"""Mini-batch SGD's own noise against the SDE's (simulation/sgd_noise.py; annealing paper §4): the
minibatch gradient against the full one (brute force over every minibatch) and against finite
differences, the noise at the trap against its closed form, the noiseless control, the params'
errors, and the runner at a toy size."""

from __future__ import annotations

import copy
import inspect
import math

import numpy as np
import pytest

from infonce_lab.params import ConfigError, SgdNoiseConfig, parse_params
from infonce_lab.simulation import runner
from infonce_lab.simulation import sgd_noise as sn
from infonce_lab.simulation.circle import interleaved_trap, quench, s1_model

# the schema's defaults, shrunk (the simulation has no defaults of its own); T = 20: S1's P2 SDE at
# c/c* = ½ keeps none of 200 chains from t = 10 on
TOY = SgdNoiseConfig(chains=60, horizon=20.0, first_check=1.0).model_dump()


def _anchor_loss(model, theta: np.ndarray, beta: float) -> np.ndarray:
    """ℓ_a(θ, β) of every anchor term, (..., P), from the similarities (independent of the
    gradient code)."""
    rows, pos = model._rows(np.cos(model._diffs(theta)))
    x = beta * rows
    m = x.max(axis=-1)
    return m + np.log(np.exp(x - m[..., None]).sum(axis=-1)) - beta * pos


@pytest.mark.parametrize("kappa", [1.0, 2.5])
def test_the_minibatch_gradient_is_unbiased_by_brute_force(kappa):
    model = s1_model(kappa)
    rng = np.random.default_rng(0)
    theta = rng.uniform(0.0, 2.0 * np.pi, (4, 40))
    beta = rng.uniform(0.5, 40.0, 40)
    full = model.grad_cm(theta, beta)
    ones = np.ones((4, 40))
    assert np.abs(sn.minibatch_grad_cm(model, theta, beta, ones) - full).max() < 1e-12
    for batch in (1, 2, 3):
        table = sn.subsets(4, batch)
        assert table.shape == (math.comb(4, batch), 4)
        assert np.allclose(table.sum(axis=1), 4.0)  # each row: m terms, each × 4/m
        grads = [sn.minibatch_grad_cm(model, theta, beta, np.repeat(w[:, None], 40, axis=1))
                 for w in table]
        mean = np.mean(grads, axis=0)  # every subset is equally likely
        assert np.abs(mean - full).max() < 1e-12 * max(1.0, np.abs(full).max())
        assert max(np.abs(g - full).max() for g in grads) > 1e-3  # a minibatch is not the full
    # the float32-trig path the runner uses stays within ~1e-7·βκ_s of the exact one
    fast = sn.minibatch_grad_cm(model, theta, beta, ones, fast_trig=True)
    assert np.abs(fast - full).max() < 1e-5 * kappa * beta.max()


def test_each_anchor_term_matches_finite_differences_of_its_own_loss():
    model = s1_model(1.0)
    rng = np.random.default_rng(1)
    for _ in range(5):
        theta, beta = rng.uniform(0, 2 * np.pi, 4), float(rng.uniform(1, 30))
        g = sn.anchor_grads(model, theta, beta)  # (P, N)
        eps = 1e-6
        fd = np.stack([(_anchor_loss(model, theta + eps * e, beta)
                        - _anchor_loss(model, theta - eps * e, beta)) / (2 * eps)
                       for e in np.eye(4)], axis=1)  # (P, N)
        assert np.abs(g - fd).max() < 1e-6 * beta


@pytest.mark.parametrize("kappa", [1.0, 2.0])
@pytest.mark.parametrize("beta", [8.0, 37.0])
def test_at_the_trap_every_term_pushes_but_the_terms_cancel(kappa, beta):
    """Anchor (i, j) at the trap: its positive antipodal, its two negatives at ±π/2, tied; its
    term pushes each negative away from i with force β·q·κ_s, q = 1/(2 + e^(−βκ_s)) (the softmax
    weight of a tied negative), and leaves θ_i alone; the four terms cancel in pairs."""
    model = s1_model(kappa)
    g = sn.anchor_grads(model, interleaved_trap(2), beta)
    q = 1.0 / (2.0 + math.exp(-beta * kappa))
    f = beta * q * kappa
    expected = f * np.array([[0, 0, -1, 1], [0, 0, 1, -1], [1, -1, 0, 0], [-1, 1, 0, 0]])
    assert np.abs(g - expected).max() < 1e-9 * f
    assert np.abs(g.mean(axis=0)).max() < 1e-9 * f
    for batch in (1, 2, 3):
        cov = sn.minibatch_covariance(g, batch)
        # sampling m of 4 without replacement: (4 − m)/(3m) × the terms' covariance, whose two
        # nonzero eigenvalues are f² each (on the pairs' breathing modes (−1, 1, 0, 0)/√2, …)
        factor = (4 - batch) / (3 * batch)
        ev = np.linalg.eigvalsh(cov)
        assert np.allclose(ev, [0, 0, f**2 * factor, f**2 * factor], atol=1e-9 * f**2)
        for mode in ([-1, 1, 0, 0], [0, 0, -1, 1]):
            u = np.array(mode) / math.sqrt(2)
            assert u @ cov @ u == pytest.approx(f**2 * factor, rel=1e-9)
        stiff = np.array([-1, -1, 1, 1]) / 2.0  # the pairs' relative rotation: no noise
        assert abs(stiff @ cov @ stiff) < 1e-12 * f**2


def test_trap_noise_reports_the_closed_form_and_the_step_that_would_match():
    out = sn.trap_noise(1.0, 1, [8.0, 37.0], [0.01, 0.01])
    assert out["covariance_factor"] == 1.0
    for row in out["by_beta"]:
        beta = row["beta"]
        lam = (1.0 / (2.0 + math.exp(-beta))) ** 2  # of ĝ/β, batch 1: q²κ_s²
        assert row["eigenvalues"][0] == pytest.approx(lam, rel=1e-9)
        assert row["eigenvalues"][1] == pytest.approx(lam, rel=1e-9)
        assert abs(row["eigenvalues"][2]) < 1e-12 and row["rank"] == 2
        assert row["trace"] == pytest.approx(2 * lam, rel=1e-9)
        assert row["full_grad_norm"] < 1e-9
        # all of the noise on the two soft (breathing) Hessian modes, none on the stiff one
        share = row["noise_share_on_hessian_modes"]
        assert share[0] + share[1] == pytest.approx(1.0, abs=1e-9) and abs(share[2]) < 1e-9
        assert row["hessian_eigenvalues_p2"][-1] == pytest.approx(beta, rel=1e-3)  # ≈ κ_s²β
        assert row["temperature_ratio"] == pytest.approx(0.01 * beta * lam / 2, rel=1e-12)
        assert row["eta_matching"] == pytest.approx(2 / (beta * lam), rel=1e-12)
        # matching needs ≈ 4× the step at which the drift at the trap turns unstable
        assert row["eta_matching"] / row["eta_stability"] == pytest.approx(1 / lam, rel=1e-3)


def test_gradient_descent_from_the_jittered_trap_stays_in_it_at_the_schedules_lowest_beta():
    """The control: with no noise the trap holds — it is a local minimum of L(·, β) at β(0) =
    c·ln K = 8 (c = c*/2) already, and the P2 drift contracts the jitter."""
    model = s1_model(1.0)
    rng = np.random.default_rng(2)
    theta = interleaved_trap(2)[:, None] + 0.05 * rng.standard_normal((4, 500))
    ones = np.ones((4, 500))
    beta = 8.0
    for _ in range(3000):  # t = 30 at dt = 0.01, at the lowest β of the run
        theta -= (0.01 / beta) * sn.minibatch_grad_cm(model, theta, beta, ones)
    labels = quench(model, theta.T, 20.0, step=0.04)
    assert not labels.is_global.any()
    br = (np.stack([theta[1] - theta[0], theta[3] - theta[2]]) - np.pi + np.pi) % (2 * np.pi) - np.pi
    assert np.abs(br).max() < 1e-3  # drawn back onto the trap


def test_the_runner_is_declared_and_a_seed_decides_the_numbers():
    assert runner(SgdNoiseConfig.RUNS) is sn.run_sgd_noise
    params = inspect.signature(sn.run_sgd_noise).parameters
    assert set(params) == set(SgdNoiseConfig.model_fields)
    assert all(p.default is inspect.Parameter.empty for p in params.values())
    small = {**TOY, "horizon": 1.0, "chains": 12}
    a, b = sn.run_sgd_noise(**small), sn.run_sgd_noise(**small)
    assert a == b
    assert sn.run_sgd_noise(**{**small, "seed": 1})["breathing_rms"] != a["breathing_rms"]
    with pytest.raises(ValueError, match="batch must be in"):
        sn.run_sgd_noise(**{**small, "batch": 4})


def test_the_toy_run_sgd_and_gd_stay_the_sde_escapes():
    res = sn.run_sgd_noise(**TOY)
    assert res["convergence"]["steps"] == {"step": 2000, "half_step": 4000}
    assert res["c"] == pytest.approx(8.0) and res["beta_start"] == pytest.approx(8.0)
    for r in ("step", "half_step"):
        curves = res["curves"][r]
        assert curves["gd"]["k_trap"] == [60] * len(curves["gd"]["t"])  # the control stays
        assert curves["sgd"]["k_trap"][-1] == 60
        assert curves["sde"]["k_trap"][0] == 60 and curves["sde"]["k_trap"][-1] <= 1
        rms = res["breathing_rms"][r]
        assert rms["gd"] < 1e-4 < rms["sgd"] < rms["sde_in_well_predicted"] / 2
        assert rms["sgd"] == pytest.approx(rms["sgd_predicted"], rel=0.35)
    # SGD's noise shrinks with the step: halving η halves its in-well variance (≈)
    ratio = (res["breathing_rms"]["step"]["sgd"] / res["breathing_rms"]["half_step"]["sgd"]) ** 2
    assert 1.3 < ratio < 3.0


@pytest.mark.parametrize(("patch", "key"), [
    ({"c_ratio": 1.5}, "simulation.sgd_noise.c_ratio = 1.5"),
    ({"batch": 4}, "simulation.sgd_noise.batch = 4"),
    ({"batch": 0}, "simulation.sgd_noise.batch = 0"),
    ({"chains": 3}, "simulation.sgd_noise.chains = 3"),
    ({"first_check": 200.0}, "simulation.sgd_noise.first_check = 200.0"),
    ({"dt_max": -0.01}, "simulation.sgd_noise.dt_max = -0.01"),
    ({"horizon": 100.0, "typo": 1}, "simulation.sgd_noise.typo"),
])
def test_bad_values_name_their_key(raw, patch, key):
    bad = copy.deepcopy(raw)
    bad["simulation"]["sgd_noise"].update(patch)
    with pytest.raises(ConfigError) as err:
        parse_params(bad)
    assert key in str(err.value)


def test_the_study_lists_the_experiment(raw):
    params = parse_params(copy.deepcopy(raw))
    assert "sgd_noise" in params.simulation.experiments
    assert params.simulation.sgd_noise.c_ratio <= 1.0  # a schedule where the SDE escapes
