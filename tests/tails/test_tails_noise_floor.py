"""The noise floor's intervals (WEINCE App. C.1, Fig. 5): every MSE is a mean over replicates with
its t-interval (checked against scipy), the verdict ratios are the MSEs in theory-line units, the
moment solver agrees with a root finder, and a replicate with no MLE makes its MSE undefined."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from infonce_lab.report.verdicts import Estimate
from infonce_lab.tails.noise_floor import _solve_moment, mean_estimate, noise_floor


def test_mean_estimate_is_scipys_t_interval():
    v = np.random.default_rng(0).exponential(size=300)
    e = mean_estimate(v)
    lo, hi = stats.t.interval(0.95, df=299, loc=v.mean(), scale=stats.sem(v))
    assert (e["low"], e["high"]) == pytest.approx((lo, hi))
    got = Estimate.from_dict(e)
    assert got.t is not None and got.t.interval() == pytest.approx((lo, hi))


def test_moment_solver_agrees_with_brentq():
    x = -np.log1p(-np.array([0.15, 0.45, 0.70, 0.90]))
    targets = np.array([0.5, 1.0, 1.7])

    def mean_at(theta: float) -> float:
        p = np.exp(theta * x - (theta * x).max())
        return float((p / p.sum()) @ x)

    ours = _solve_moment(x, targets)
    for t, th in zip(targets, ours, strict=True):
        assert th == pytest.approx(optimize.brentq(lambda a, t=t: mean_at(a) - t, -50, 50),
                                   abs=1e-9)


def test_estimates_are_the_mses_in_theory_units():
    out = noise_floor(ns=(200, 2000), replicates=2000, seed=1)
    est = out["estimates"]
    for i, n in enumerate(out["n"]):
        k = str(n)
        assert est["mse_weibit"][k]["value"] == pytest.approx(out["mse_weibit"][i])
        assert est["weibit_n_mse_over_c"][k]["value"] == pytest.approx(
            out["mse_weibit"][i] * n / out["c"])
        assert est["softmax_mse_over_floor"][k]["value"] == pytest.approx(
            out["mse_softmax"][i] / out["softmax_floor"])
        assert est["weibit_n_mse_over_c"][k]["n"] == 2000
    assert out["theory_weibit"][0] == pytest.approx(out["c"] / 200)


def test_a_replicate_without_an_mle_makes_the_mse_undefined():
    """n = 1: a lone winner on the top or bottom candidate leaves the moment equation without a
    root (the bisection would return its ±100 clip)."""
    est = noise_floor(ns=(1,), replicates=200, seed=2)["estimates"]
    for key in ("mse_weibit", "weibit_n_mse_over_c", "mse_softmax", "softmax_mse_over_floor"):
        e = est[key]["1"]
        assert e["value"] is None and "no MLE" in e["undefined"]
        assert not Estimate.from_dict(e).defined
