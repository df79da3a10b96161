"""The link-theory experiment's math against closed forms, brute force and outside libraries:
two-candidate winner laws in closed form, the Kolmogorov distance by a loop, the DKW band's
coverage, and the certified Prop. C.3 bound against a dense scan (and a known answer: one pair
of candidates can always be matched by some τ̃)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from scipy import stats

from infonce_lab.params import LinkTheoryConfig, NoiseFloorConfig, SimulationConfig, load_params
from infonce_lab.pipeline.simulate import run_experiment
from infonce_lab.simulation import link_theory as lt


def _binomial_ok(wins: int, trials: int, p: float, z: float = 4.5) -> bool:
    return abs(wins / trials - p) < z * math.sqrt(p * (1 - p) / trials)


def test_two_candidate_winner_laws_match_their_closed_forms():
    rng = np.random.default_rng(0)
    s = np.array([[0.2, 0.6]])
    q = 1 - s[0]
    m = 200_000
    # Gumbel utilities: exactly the softmax
    c = lt.winner_counts(s, lt.gumbel_utilities(0.25), m, rng)
    assert _binomial_ok(c[0, 1], m, 1 / (1 + math.exp(-(0.6 - 0.2) / 0.25)))
    # Weibull(β) shortfalls: exactly (1 − s)^{−β}/Σ
    c = lt.winner_counts(s, lt.weibull_utilities(2.0), m, rng)
    assert _binomial_ok(c[0, 1], m, q[1] ** -2 / (q[0] ** -2 + q[1] ** -2))
    # Fréchet(α) scaling: exactly (1 + s)^α/Σ
    c = lt.winner_counts(s, lt.frechet_utilities(3.0), m, rng)
    assert _binomial_ok(c[0, 1], m, 1.6**3 / (1.2**3 + 1.6**3))
    # Uniform shortfall: P(q₂V₂ < q₁V₁) = 1 − q₂/(2q₁) for q₂ < q₁ — not the Weibit law q⁻¹/Σ
    c = lt.winner_counts(s, lt.uniform_shortfall_utilities(), m, rng)
    exact = 1 - q[1] / (2 * q[0])
    assert _binomial_ok(c[0, 1], m, exact)
    assert not _binomial_ok(c[0, 1], m, (1 / q[1]) / (1 / q[0] + 1 / q[1]))
    # Exponential noise: P(a + E₁ > b + E₂) = 1 − e^{−(a−b)}/2 for a ≥ b — not the softmax
    c = lt.winner_counts(s, lt.exponential_noise_utilities(0.25), m, rng)
    assert _binomial_ok(c[0, 1], m, 1 - 0.5 * math.exp(-1.6))


def test_winner_counts_are_chunked_without_loss():
    rng = np.random.default_rng(1)
    s = lt.random_sets(rng, 3, 5, -0.5, 0.9)
    c = lt.winner_counts(s, lt.gumbel_utilities(0.2), 1001, rng, chunk_elems=40)
    assert c.shape == (3, 5) and (c.sum(1) == 1001).all()


def test_ks_distance_against_a_loop():
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 50, size=(4, 6))
    probs = lt.link_probs(rng.normal(size=(4, 6)))
    d = lt.ks_distances(counts, probs)
    for i in range(4):
        emp = counts[i] / counts[i].sum()
        ref = max(abs(sum(emp[:j + 1]) - sum(probs[i, :j + 1])) for j in range(6))
        assert d[i] == pytest.approx(ref)


def test_dkw_band_covers_at_least_its_level_on_a_discrete_law():
    """Repeated empirical laws of a 6-point law: the sup-distance exceeds the 95% band in at
    most ≈ 5% of repetitions (DKW is conservative for discrete laws)."""
    rng = np.random.default_rng(3)
    p = np.array([0.05, 0.1, 0.4, 0.2, 0.15, 0.1])
    m, reps = 400, 2000
    counts = rng.multinomial(m, p, size=reps)
    d = lt.ks_distances(counts, np.broadcast_to(p, counts.shape))
    eps = lt.dkw_halfwidth(m)
    assert eps == pytest.approx(math.sqrt(math.log(40) / 800))
    miss = float((d > eps).mean())
    assert miss <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    # Bonferroni over families shrinks each family's miss rate
    assert lt.dkw_halfwidth(m, families=8) > eps


def test_worst_set_interval_covers_the_truth():
    rng = np.random.default_rng(4)
    s = lt.random_sets(rng, 4, 8, -0.5, 0.95)
    counts = lt.winner_counts(s, lt.weibull_utilities(2.0), 30_000, rng)
    own = lt.worst_set_distance(counts, lt.link_probs(lt.log_weibit_weight(s, 2.0)))
    assert own["low"] == 0.0 and own["high"] < 0.02 and len(own["per_set"]) == 4
    wrong = lt.worst_set_distance(counts, lt.link_probs(lt.log_weibit_weight(s, 3.0)))
    assert wrong["low"] > 0.02


# ---------------------------------------------------------------------------------- Prop. C.3
def _dense_min(t_vals: np.ndarray, target: np.ndarray, theta_max: float) -> float:
    theta = np.linspace(0.0, theta_max, 40_001)
    return float(lt.worst_tv(theta, t_vals, target).min())


@pytest.mark.parametrize("name", ["weibit", "blend", "affine"])
def test_certified_bound_brackets_a_dense_scan(name):
    rng = np.random.default_rng(5)
    s = lt.random_sets(rng, 20, 6, -0.5, 0.95)
    target = lt.link_probs(s / 0.2)
    t_vals = lt.coordinate(name, s, 0.5)
    res = lt.certified_min_worst_tv(t_vals, target, theta_max=40.0, gap=1e-4)
    dense = _dense_min(t_vals, target, res["theta_max"])
    assert res["converged"]
    assert res["lower"] <= dense + 1e-12
    assert res["upper"] <= dense + 1e-6  # the search finds the scan's minimum (or better)
    assert res["upper"] - res["lower"] <= 1e-4 + 1e-12
    if name == "affine":  # T = 2s + 0.3: θ = 1/(2τ) undoes it
        assert res["upper"] < 1e-4 and res["theta"] == pytest.approx(2.5, abs=1e-3)
    else:
        assert res["lower"] > 0.05


def test_one_pair_can_always_be_matched():
    """Known answer: with K = 2 one ratio fixes the law, so some τ̃ matches any increasing T."""
    s = np.array([[-0.1, 0.8]])
    target = lt.link_probs(s / 0.2)
    res = lt.certified_min_worst_tv(lt.coordinate("weibit", s), target, theta_max=40.0,
                                    gap=1e-5)
    theta = (0.9 / 0.2) / (-math.log(0.2) + math.log(1.1))
    assert res["upper"] < 1e-4 and res["theta"] == pytest.approx(theta, rel=1e-3)


def test_search_widens_beyond_a_too_small_theta_max():
    rng = np.random.default_rng(6)
    s = lt.random_sets(rng, 10, 6, -0.5, 0.95)
    target = lt.link_probs(s / 0.05)
    res = lt.certified_min_worst_tv(lt.coordinate("affine", s), target, theta_max=1.0)
    assert res["theta_max"] > 10.0 and res["upper"] < 1e-3


def test_worst_tv_matches_scipy_softmax():
    from scipy.special import softmax

    rng = np.random.default_rng(7)
    s = lt.random_sets(rng, 5, 7, -0.5, 0.95)
    t_vals, target = lt.coordinate("weibit", s), softmax(s / 0.1, axis=1)
    for th in (0.0, 1.3, 17.0):
        ref = max(0.5 * np.abs(softmax(th * t_vals[i]) - target[i]).sum() for i in range(5))
        assert lt.worst_tv(np.array([th]), t_vals, target)[0] == pytest.approx(ref)


# ----------------------------------------------------------------------------------- the run
def test_run_is_deterministic_and_json_shaped():
    cfg = LinkTheoryConfig.model_validate({
        "plackett_luce": {"candidates": 4, "sets": 2, "trials": 500},
        "large_k": {"ks": [2, 8], "sets": 2, "trials": 500},
        "mismatch": {"candidates": 4, "sets": 10, "taus": [0.2], "lambdas": [0.5]}})
    a = run_experiment("link_theory", SimulationConfig(link_theory=cfg))
    b = run_experiment("link_theory", SimulationConfig(link_theory=cfg))
    assert a == b
    assert set(a) == {"plackett_luce", "large_k", "coordinate_mismatch", "accuracy"}
    for block in a["plackett_luce"].values():
        for e in [block["match"], *block["controls"].values()]:
            assert {"value", "low", "high", "level", "method", "n"} <= set(e)
            assert e["low"] <= e["value"] <= e["high"]
    assert set(a["coordinate_mismatch"]) == {"weibit@tau=0.2", "blend_0.5@tau=0.2",
                                             "affine@tau=0.2"}
    assert a["accuracy"]["plackett_luce_halfwidth"] == pytest.approx(lt.dkw_halfwidth(500, 2))


def test_config_defaults_are_the_shipped_params(repo_root):
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    assert LinkTheoryConfig.model_validate(raw["simulation"]["link_theory"]) == LinkTheoryConfig()
    assert NoiseFloorConfig.model_validate(raw["tails"]["noise_floor"]) == NoiseFloorConfig()
    params = load_params(repo_root / "params.yaml")
    assert "link_theory" in params.simulation.experiments


@pytest.mark.parametrize(("patch", "match"), [
    ({"score_low": 0.9, "score_high": 0.5}, "score_low"),
    ({"plackett_luce": {"wrong_exponent": 1.0}}, "differ from 1"),
    ({"mismatch": {"lambdas": [1.5]}}, "less than 1"),
])
def test_bad_link_theory_params_are_rejected(patch, match):
    with pytest.raises(ValueError, match=match):
        LinkTheoryConfig.model_validate(patch)


def test_kolmogorov_distance_agrees_with_scipy_ks_on_continuous_draws():
    """Cross-check of the cumulative distance: for a law on many fine cells it approaches
    scipy's one-sample KS statistic of the same draws against the continuous CDF."""
    rng = np.random.default_rng(8)
    x = rng.uniform(size=5000)
    cells = 2000
    counts = np.bincount((x * cells).astype(int), minlength=cells)[None]
    probs = np.full((1, cells), 1 / cells)
    ours = lt.ks_distances(counts, probs)[0]
    assert ours == pytest.approx(stats.kstest(x, "uniform").statistic, abs=1 / cells + 1e-9)
