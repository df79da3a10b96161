"""The report's simulations section: verdict rules on small synthetic results with known answers,
figures from synthetic files shaped like the simulate stage's, and the section's absence when no
reports/sims file exists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infonce_lab.report import _legacy_rows
from infonce_lab.report._legacy import (
    NOT_REPRODUCED,
    REPRODUCED,
    combined_verdict,
    md_cell,
    verdict_class,
)
from infonce_lab.report.figures import (
    gibbs_masses,
    hessian_scaling,
    large_batch_consistency,
    modality_gap_curves,
    s0_hazard_slopes,
    s0_trap_curves,
    s1_trap_curves,
    sim_figures,
    wang_isola_gaps,
)
from infonce_lab.report.render import (
    render,
)
from infonce_lab.report.sims import (
    SIM_EXPERIMENTS,
    bandwidth_verdict,
    barrier_s0_verdict,
    coefficient_verdict,
    concentration_verdict,
    escape_verdict,
    exponent_verdict,
    fd_verdict,
    gibbs_match_verdict,
    gibbs_occupancy_verdict,
    grad_cos_verdict,
    grad_rel_verdict,
    grows_verdict,
    growth_verdict,
    hazard_verdict,
    load_sims,
    minimizer_verdict,
    outlier_rows,
    outlier_verdict,
    over_concentration_verdict,
    p1_vs_p2_verdict,
    plateau_verdict,
    s1_barrier_verdict,
    sim_verdicts,
    sims_context,
    slope_verdict,
    trap_at,
    value_gap_verdict,
    wi_limit_verdict,
    wi_rate_verdict,
)

PNG = b"\x89PNG"
INCONCLUSIVE = "inconclusive"


# ------------------------------------------------------------------------- synthetic results
def _cp(t: float, p: float, half: float = 0.04) -> dict[str, Any]:
    """A checkpoint; at p = 0 the Wilson lower end is 0 up to round-off, as in the files."""
    lo = 1e-18 if p == 0 else max(p - half, 0.0)
    return {"t": t, "p_trap": p, "trap_ci": [lo, min(p + half, 1.0)],
            "p_surv": 0.0, "surv_ci": [1e-18, 0.01]}


def _curve(name: str, ps: list[float], ts: list[float]) -> dict[str, Any]:
    cps = [_cp(t, p) for t, p in zip(ts, ps, strict=True)]
    return {"name": name, "t": ts, "n": 100, "p_trap": ps,
            "trap_ci": [[c["trap_ci"][0] for c in cps], [c["trap_ci"][1] for c in cps]],
            "p_surv": [min(p, 0.5) for p in ps], "surv_ci": [[0.0] * len(ts), [0.6] * len(ts)]}


def _hazard(slope: float, predicted: float, se: float = 0.05) -> dict[str, Any]:
    return {"slope": slope, "predicted_slope": predicted, "stderr": se, "exponent": 1 + slope,
            "n_bins": 8, "events": 120, "t_range": [0.1, 40.0]}


def _s0() -> dict[str, Any]:
    ts = [0.0, 1.0, 10.0, 100.0, 1000.0]
    paths = {"log_c0.5": [1.0, 0.6, 0.3, 0.2, 0.1], "log_c1": [1.0, 0.7, 0.4, 0.25, 0.15],
             "log_c2": [1.0, 0.9, 0.7, 0.6, 0.6], "sqrt": [1.0, 0.8, 0.7, 0.7, 0.7],
             "cosine_T1000": [1.0, 0.9, 0.6, 0.4, 0.1]}
    fits = {f"log_c{r:g}": {
        "c_ratio": r, "c": 0.65 * r, "predicted": 1 - r,
        "hazard": _hazard(-r + 0.05, -r) if r < 2 else None,
        "survival_loglog": {"exponent": 3.0, "stderr": 1.5, "n_points": 10, "t_range": [0.1, 2.0]},
        "survival_integrated": {"exponent": 0.8, "stderr": 0.1, "n_points": 10,
                                "t_range": [0.1, 2.0]},
        "occupancy_loglog": {"exponent": 0.2, "stderr": 0.05, "n_points": 4, "t_range": [1, 1e3]},
        "gibbs_trap_mass": [0.15, 0.11 if r < 2 else 1e-4]} for r in (0.5, 1.0, 2.0)}
    return {"experiment": "s0", "params": {"a": 0.5}, "seconds": 1.0, "a": 0.5,
            "delta_e": 1.53125, "c_star": 1 / 1.53125, "chains": 100, "dt": 0.01, "horizon": 1000.0,
            "K": 2.718, "dynamics": "P2", "scheme": "projected", "log_fits": fits,
            "checkpoints": {n: [_cp(100.0, p[3]), _cp(1000.0, p[4])] for n, p in paths.items()},
            "curves": [_curve(n, p, ts) for n, p in paths.items()]}


def _s1() -> dict[str, Any]:
    ts = [0.0, 10.0, 20.0]

    def row(name: str, ps: list[float], slope: float | None) -> dict[str, Any]:
        c = _curve(name, ps, ts)
        return {**c, "p_trap_end": ps[-1], "p_trap_end_ci": [c["trap_ci"][0][-1],
                                                             c["trap_ci"][1][-1]],
                "hazard_slope": slope}

    return {"experiment": "s1", "params": {}, "seconds": 1.0, "chains": 100, "dt": 0.01,
            "horizon": 20.0, "c_ratios": [0.5, 2.0],
            "barrier": {"kappa_s": 1.0, "delta_e_max_u0": 0.0624, "c_star": 16.02,
                        "delta_e_max_f": 0.045, "c_star_f": 22.2, "grid": 64, "beta_bar": 20.0,
                        "trap_u0": 1.0, "trap_barrier_u0": 0.0624, "trap_barrier_f": 0.045},
            "dynamics": {"P2": [row("log c/c*=0.5", [1, 0, 0], None),
                                row("log c/c*=2", [1, 0.5, 0.3], -2.1)],
                         "P1": [row("log c/c*=0.5", [1, 0.5, 0.6], -0.4),
                                row("log c/c*=2", [1, 0.1, 0.0], None)]}}


def _hessian_config(name: str, u0: float, norms: list[float], top: float) -> dict[str, Any]:
    return {"name": name, "u0": u0, "betas": [1.0, 10.0, 100.0, 200.0], "norm_full": norms,
            "slope_full": top, "slope_full_top": top, "fd_rel_err_max": 1e-7,
            "decay_rate_full_top": 0.5 if u0 == 0 else -0.01, "min_margin": 0.5 if u0 == 0 else -1}


def _hessian() -> dict[str, Any]:
    summary = {"mean": 1.0, "median": 1.0, "q05": 0.9, "q25": 0.99, "q75": 1.01, "q95": 1.2}
    return {"experiment": "hessian", "params": {"betas": [1, 10, 100, 200]}, "seconds": 1.0,
            "configs": [_hessian_config("s1_trap", 1.0, [1, 100, 1e4, 4e4], 2.0),
                        _hessian_config("s1_trap_perturbed", 1.1, [1, 10, 100, 200], 1.0),
                        _hessian_config("s1_minimizer", 0.0, [0.3, 1e-3, 1e-40, 1e-80], -60)],
            "random": {"count": 3, "slope_full": summary, "slope_full_top": summary,
                       "slope_full_top_within_0.1_of_1": 0.7,
                       "coeff_over_gap": {**summary, "median": 1.0001},
                       "coeff_over_gap_within_1pct": 0.95, "fd_rel_err_max": 2e-6,
                       "per_config": [{"slope_full": s, "slope_full_top": s, "u0": 0.3}
                                      for s in (0.9, 1.0, 1.1)]}}


def _wang_isola(tau: float) -> dict[str, Any]:
    m = [4, 16, 64, 256]
    return {"tau": tau, "d": 16, "kappa_pos": 10.0, "anchors": 100, "m": m,
            "gap_of_expectation": [2.0 / x for x in m], "gap_se": [0.01 / x for x in m],
            "gap_theory_leading": [2.2 / x for x in m], "c1": 2.2,
            "sd_per_anchor": [0.4 / x**0.5 for x in m], "rms_per_anchor": [0.5 / x**0.5 for x in m],
            "limit": -0.85, "alignment_term": -0.97, "uniformity_term": 0.12,
            "limit_from_align_uniform_sample": -0.86, "slope_gap_of_expectation": -1.0,
            "slope_gap_of_expectation_upper_half": -1.0, "slope_sd_per_anchor": -0.5,
            "slope_sd_per_anchor_upper_half": -0.5}


def _grad(critic: str, cos: list[float], rel: list[float]) -> dict[str, Any]:
    return {"critic": critic, "tau": 0.1, "n": [4, 64, 1024], "n_ref": 4096, "seeds": 2,
            "cos_mean": cos, "cos_std": [0.01] * 3, "rel_err_mean": rel, "rel_err_std": [0.01] * 3,
            "slope_rel_err": -0.3, "norm_ratio_mean": [0.1, 0.5, 0.9],
            "norm_ratio_std": [0.01] * 3}


def _gap(values: list[float], slope: float) -> dict[str, Any]:
    return {"abs_gap_mean": values, "gap_mean": values, "gap_std": [0.01] * len(values),
            "slope_abs_gap": slope, "slope_abs_gap_upper_half": slope}


def _large_batch() -> dict[str, Any]:
    value = {"critic": "cosine", "tau": 0.1, "n": [4, 64, 4096], "n_ref": 65536, "seeds": 2,
             "with_positive": _gap([6.0, 3.0, 0.6], -0.3),
             "decoupled": _gap([0.5, 0.1, 0.004], -0.6)}
    return {"experiment": "large_batch", "params": {}, "seconds": 1.0,
            "wang_isola": [_wang_isola(0.5), _wang_isola(0.2)],
            "grad_consistency": [_grad("cosine", [0.4, 0.85, 0.99], [1.0, 0.9, 0.56]),
                                 _grad("rbf", [0.4, 0.9, 0.99], [1.4, 0.5, 0.12])],
            "value_gap": [value]}


def _band(h: float, taus: list[float], gibbs: list[float], trained: list[float],
          parted: list[float]) -> dict[str, Any]:
    return {"h": h, "tau": taus, "gibbs_mass": gibbs, "trained_mean": trained,
            "trained_sem": [0.01] * len(taus), "trained_per_seed": [[v, v] for v in trained],
            "diff": [a - b for a, b in zip(trained, gibbs, strict=True)], "parted_at_tau": parted}


def _gibbs() -> dict[str, Any]:
    taus = [10.0, 1.0, 0.5, 0.1]
    gibbs = [0.13, 0.19, 0.26, 0.71]
    return {"experiment": "gibbs", "params": {"part_tol": 0.05, "n_gibbs": 1000}, "seconds": 1.0,
            "tau": taus, "radius": 0.5, "gibbs_mass": gibbs, "gibbs_se": [0.001] * 4,
            "uniform_mass": 0.12, "particles": 16, "steps": 10, "seeds": 2,
            "by_bandwidth": [_band(0.35, taus, gibbs, [0.13, 0.2, 0.27, 0.95], [0.1]),
                             _band(0.1, [0.5, 0.1], [0.26, 0.71], [0.27, 0.72], [])]}


def _modality_gap() -> dict[str, Any]:
    sig = [0.0, 0.2, 0.4]
    per_seed = [[0.005, 0.006, 50.0], [0.04, 0.05, 0.06], [0.2, 3.0, 0.25]]
    return {"experiment": "modality_gap", "seconds": 1.0,
            "params": {"steps": 10, "batch": 8, "n_eval": 100, "outlier_factor": 10.0,
                       "collapse_ratio": 0.1, "seeds": 3},
            "sigma_mis": sig, "seeds": 3, "steps": 10, "batch": 8,
            "d_sym_mean": [16.7, 0.05, 1.15], "d_sym_sem": [16.6, 0.006, 0.9],
            "d_sym_median": [0.006, 0.05, 0.25], "d_sym_per_seed": per_seed,
            "d_sym_mean_non_collapsed": [0.0055, 0.05, 1.15],
            "d_sym_sem_non_collapsed": [0.0005, 0.006, 0.9],
            "min_singular_ratio_per_seed": [[0.3, 0.3, 0.005], [0.4] * 3, [0.5, 0.2, 0.5]],
            "collapsed_per_seed": [[False, False, True], [False] * 3, [False] * 3],
            "outlier_vs_collapsed": {"outlier_and_collapsed": 1, "outlier_not_collapsed": 1,
                                     "collapsed_not_outlier": 0, "neither": 7},
            "outliers": [
                {"sigma_mis": 0.0, "seed": 2, "d_sym": 50.0, "median_d_sym": 0.006,
                 "singular_values_f": [1.0, 0.005], "singular_values_g": [0.8, 0.004],
                 "det_fg_sign": 1.0, "det_fg_sign_init": -1.0, "occupied_bins": [5, 9],
                 "final_loss": 4.2},
                {"sigma_mis": 0.4, "seed": 1, "d_sym": 3.0, "median_d_sym": 0.25,
                 "singular_values_f": [1.0, 0.2], "singular_values_g": [0.8, 0.3],
                 "det_fg_sign": -1.0, "det_fg_sign_init": 1.0, "occupied_bins": [59, 60],
                 "final_loss": 4.3}]}


SIMS = {"s0": _s0, "s1": _s1, "hessian": _hessian, "large_batch": _large_batch,
        "gibbs": _gibbs, "modality_gap": _modality_gap}


def _all() -> dict[str, dict[str, Any]]:
    return {name: make() for name, make in SIMS.items()}


# ---------------------------------------------------------------------------- general rules
@pytest.mark.parametrize(("slope", "predicted", "se", "expected"), [
    (-0.95, -1.0, 0.05, REPRODUCED),        # within the 0.15 floor
    (-1.25, -1.0, 0.15, REPRODUCED),        # within 2 s.e.
    (-1.5, -1.0, 0.05, NOT_REPRODUCED),
    (-1.0, -1.0, 0.3, INCONCLUSIVE),        # too imprecise to tell c/c* steps apart
    (None, -1.0, None, INCONCLUSIVE),
])
def test_slope_verdict(slope: float | None, predicted: float, se: float | None, expected: str):
    assert slope_verdict(slope, predicted, se).startswith(expected)


def test_combined_verdict_keeps_a_shared_reason():
    why = "inconclusive (not testable)"
    assert combined_verdict([why, why]) == why
    assert combined_verdict([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert combined_verdict([REPRODUCED, NOT_REPRODUCED]).startswith(INCONCLUSIVE)


def test_verdict_class_and_markdown_cells():
    assert verdict_class(REPRODUCED) == "verdict-reproduced"
    assert verdict_class(NOT_REPRODUCED) == "verdict-not"
    assert verdict_class("inconclusive (x)") == "verdict-inconclusive"
    assert verdict_class("not run (no reports/sims file)") == "verdict-notrun"
    assert md_cell("|gap| 0.1") == "\\|gap\\| 0.1"


# ------------------------------------------------------------------------------------------ S0
@pytest.mark.parametrize(("mid", "end", "expected"), [
    (0.3, 0.1, REPRODUCED),
    (0.44, 0.47, INCONCLUSIVE),            # risen within the intervals, upper end ≥ 0.5
    (0.7, 0.6, NOT_REPRODUCED),            # still mostly trapped
    (0.1, 0.3, NOT_REPRODUCED),            # rose beyond both intervals
])
def test_escape_verdict(mid: float, end: float, expected: str):
    assert escape_verdict(_cp(100, mid), _cp(1000, end))["verdict"].startswith(expected)


@pytest.mark.parametrize(("mid", "end", "settled", "expected"), [
    (0.6, 0.6, True, REPRODUCED),
    (0.0, 0.0, True, NOT_REPRODUCED),      # Wilson lower end 1e-18: zero up to round-off
    (0.5, 0.2, True, INCONCLUSIVE),        # above 0 but still falling
    (0.5, 0.2, False, REPRODUCED),         # a schedule still cooling at T/10 may fall
])
def test_plateau_verdict(mid: float, end: float, settled: bool, expected: str):
    assert plateau_verdict(_cp(100, mid), _cp(1000, end), settled)["verdict"].startswith(expected)


def test_hazard_and_exponent_verdicts():
    assert hazard_verdict(_hazard(-0.5, -0.5))["verdict"] == REPRODUCED
    assert hazard_verdict(_hazard(-1.0, -0.5))["verdict"] == NOT_REPRODUCED
    assert hazard_verdict(None)["verdict"].startswith(INCONCLUSIVE)
    entry = _s0()["log_fits"]["log_c0.5"]
    assert "not testable" in exponent_verdict(entry, 100.0)["verdict"]
    late = {**entry, "survival_loglog": {"exponent": 0.55, "stderr": 0.05, "t_range": [1, 900]}}
    assert exponent_verdict(late, 100.0)["verdict"] == REPRODUCED
    wrong = {**entry, "survival_loglog": {"exponent": 2.0, "stderr": 0.05, "t_range": [1, 900]}}
    assert exponent_verdict(wrong, 100.0)["verdict"] == NOT_REPRODUCED
    assert exponent_verdict({**entry, "survival_loglog": None}, 100.0)["verdict"].startswith(
        INCONCLUSIVE)


def test_gibbs_occupancy_and_barrier_verdicts():
    assert gibbs_occupancy_verdict(_cp(1000, 0.1), 0.12)["verdict"] == REPRODUCED
    assert gibbs_occupancy_verdict(_cp(1000, 0.1), 0.3)["verdict"] == NOT_REPRODUCED
    s0 = _s0()
    assert barrier_s0_verdict(s0)["verdict"] == REPRODUCED
    assert barrier_s0_verdict({**s0, "delta_e": 1.6})["verdict"] == NOT_REPRODUCED


def test_trap_at_takes_the_last_check_not_after_t():
    curve = _curve("x", [1.0, 0.5, 0.2], [0.0, 10.0, 20.0])
    assert trap_at(curve, 15.0)["p_trap"] == 0.5 and trap_at(curve, 20.0)["t"] == 20.0


# ------------------------------------------------------------------------------------------ S1
def test_s1_barrier_verdict():
    b = _s1()["barrier"]
    assert s1_barrier_verdict(b)["verdict"] == REPRODUCED
    assert s1_barrier_verdict({**b, "delta_e_max_u0": 0.07})["verdict"] == NOT_REPRODUCED


def test_p1_vs_p2_verdict():
    p1 = {r["name"]: r for r in _s1()["dynamics"]["P1"]}
    p2 = {r["name"]: r for r in _s1()["dynamics"]["P2"]}
    assert p1_vs_p2_verdict(p1["log c/c*=0.5"], p2["log c/c*=0.5"])["verdict"] == REPRODUCED
    assert p1_vs_p2_verdict(p1["log c/c*=2"], p2["log c/c*=2"])["verdict"] == NOT_REPRODUCED
    both = p1_vs_p2_verdict(p2["log c/c*=0.5"], p2["log c/c*=0.5"])["verdict"]
    assert both == "inconclusive (both escaped)"
    overlap = p1_vs_p2_verdict(p2["log c/c*=2"], p2["log c/c*=2"])["verdict"]
    assert overlap == "inconclusive (intervals overlap)"


# ------------------------------------------------------------------------------------- Hessian
def test_hessian_verdicts():
    h = _hessian()
    assert fd_verdict(h)["verdict"] == REPRODUCED
    h["random"]["fd_rel_err_max"] = 1e-4
    assert fd_verdict(h)["verdict"] == NOT_REPRODUCED
    assert growth_verdict(2.0, 2.0, at_least=True)["verdict"] == REPRODUCED
    assert growth_verdict(2.0, 2.0, at_least=False)["verdict"] == NOT_REPRODUCED
    assert growth_verdict(1.02, 1.1, at_least=False)["verdict"] == REPRODUCED
    assert growth_verdict(0.5, 0.6, at_least=True)["verdict"] == NOT_REPRODUCED
    assert coefficient_verdict(h["random"])["verdict"] == REPRODUCED
    bad = {**h["random"], "coeff_over_gap": {**h["random"]["coeff_over_gap"], "median": 1.5}}
    assert coefficient_verdict(bad)["verdict"] == NOT_REPRODUCED


@pytest.mark.parametrize(("norms", "expected"), [
    ([0.3, 1e-3, 1e-40, 1e-80], REPRODUCED),
    ([0.3, 0.2, 0.1, 0.05], INCONCLUSIVE),
    ([0.3, 1.0, 2.0, 3.0], NOT_REPRODUCED),
])
def test_minimizer_verdict(norms: list[float], expected: str):
    cfg = _hessian_config("m", 0.0, norms, -1.0)
    assert minimizer_verdict(cfg)["verdict"].startswith(expected)


# ------------------------------------------------------------------------ Wang–Isola, large N
def test_wang_isola_verdicts():
    wi = _wang_isola(0.5)
    assert wi_limit_verdict(wi)["verdict"] == REPRODUCED
    slow = {**wi, "gap_of_expectation": [0.5, 0.3, 0.2, 0.1]}
    assert wi_limit_verdict(slow)["verdict"].startswith(INCONCLUSIVE)
    growing = {**wi, "gap_of_expectation": [0.1, 0.2, 0.3, 0.5]}
    assert wi_limit_verdict(growing)["verdict"] == NOT_REPRODUCED
    assert wi_rate_verdict(wi)["verdict"] == REPRODUCED
    assert wi_rate_verdict({**wi, "slope_sd_per_anchor_upper_half": -1.0})["verdict"] == (
        NOT_REPRODUCED)


def test_large_batch_verdicts():
    cosine, rbf = _large_batch()["grad_consistency"]
    assert grad_cos_verdict(cosine)["verdict"] == REPRODUCED
    assert grad_cos_verdict({**cosine, "cos_mean": [0.4, 0.8, 0.9]})["verdict"].startswith(
        INCONCLUSIVE)
    assert grad_cos_verdict({**cosine, "cos_mean": [0.9, 0.8, 0.7]})["verdict"] == NOT_REPRODUCED
    assert grad_rel_verdict(cosine)["verdict"].startswith(INCONCLUSIVE)  # 0.56: falling, not small
    assert grad_rel_verdict(rbf)["verdict"] == REPRODUCED
    assert grad_rel_verdict({**rbf, "rel_err_mean": [0.5, 0.6, 0.7]})["verdict"] == NOT_REPRODUCED
    n = [4, 64, 4096]
    assert value_gap_verdict(_gap([6.0, 3.0, 0.6], -0.3), n)["verdict"] == REPRODUCED
    assert value_gap_verdict(_gap([1.0, 0.9, 0.8], -0.05), n)["verdict"].startswith(INCONCLUSIVE)
    assert value_gap_verdict(_gap([0.1, 0.2, 0.3], 0.3), n)["verdict"] == NOT_REPRODUCED


# --------------------------------------------------------------------------------------- Gibbs
def test_gibbs_verdicts():
    g = _gibbs()
    published, small = g["by_bandwidth"]
    assert concentration_verdict(published, 0.05)["verdict"] == REPRODUCED
    flat = {**published, "trained_mean": [0.13] * 4}
    assert concentration_verdict(flat, 0.05)["verdict"] == NOT_REPRODUCED
    assert gibbs_match_verdict(published, 0.05)["verdict"] == REPRODUCED
    high = {**published, "parted_at_tau": [10.0]}  # parts at the hot end, matches colder
    assert gibbs_match_verdict(high, 0.05)["verdict"] == NOT_REPRODUCED
    noisy = {**published, "diff": [0.0, 0.08, 0.0, 0.24]}  # 0.08 > tol but not flagged parted
    assert gibbs_match_verdict(noisy, 0.05)["verdict"].startswith(INCONCLUSIVE)
    assert over_concentration_verdict(published)["verdict"] == REPRODUCED
    assert over_concentration_verdict({**published, "parted_at_tau": []})["verdict"] == (
        NOT_REPRODUCED)
    assert bandwidth_verdict(published, small, 0.05)["verdict"] == REPRODUCED
    still = {**small, "parted_at_tau": [0.1], "diff": [0.0, 0.2]}
    assert bandwidth_verdict(published, still, 0.05)["verdict"] == NOT_REPRODUCED
    nothing = {**published, "parted_at_tau": []}
    assert bandwidth_verdict(nothing, small, 0.05)["verdict"].startswith(INCONCLUSIVE)


# -------------------------------------------------------------------------------- modality gap
@pytest.mark.parametrize(("values", "sems", "expected"), [
    ([0.01, 0.05, 0.1, 0.3], None, REPRODUCED),
    ([0.3, 0.1, 0.05, 0.01], None, NOT_REPRODUCED),
    ([0.01, 0.5, 0.4, 0.3, 0.2, 0.04], None, INCONCLUSIVE),   # more falls than rises
    ([0.01, 0.05, 0.1, 0.3], [0.001, 0.01, 0.1, 0.2], INCONCLUSIVE),  # rise within 2 SEM
    ([None, 0.01, 0.05, 0.3], [None, 0.001, 0.01, 0.05], REPRODUCED),  # a missing mean skipped
    ([None, 0.3], None, INCONCLUSIVE),
])
def test_grows_verdict(values: list[float | None], sems: list[float | None] | None,
                       expected: str):
    assert grows_verdict(values, sems).startswith(expected)


def test_outliers_are_diagnosed_from_the_file():
    mg = _modality_gap()
    collapsed, real = outlier_rows(mg)
    assert collapsed["collapsed"] and "collapsed encoder" in collapsed["diagnosis"]
    assert collapsed["min_singular_ratio"] == 0.005
    assert not real["collapsed"] and "mirror" in real["diagnosis"]
    assert outlier_verdict(mg)["verdict"].startswith(INCONCLUSIVE)
    mg["outlier_vs_collapsed"] |= {"outlier_not_collapsed": 0}
    assert outlier_verdict(mg)["verdict"] == REPRODUCED
    mg["outlier_vs_collapsed"] |= {"outlier_and_collapsed": 0, "outlier_not_collapsed": 2}
    assert outlier_verdict(mg)["verdict"] == NOT_REPRODUCED
    mg["outlier_vs_collapsed"] |= {"outlier_not_collapsed": 0}
    assert outlier_verdict(mg)["verdict"].startswith(INCONCLUSIVE)  # no outliers at all


# ----------------------------------------------------------------------------------- assembly
def test_sim_verdicts_rows_and_not_run():
    sims = _all()
    del sims["gibbs"], sims["modality_gap"]  # gibbs listed without a file; modality_gap unlisted
    rows = sim_verdicts(sims, ["s0", "s1", "hessian", "large_batch", "gibbs"])
    assert all(set(r) == {"kind", "experiment", "paper", "claim", "prediction", "case", "ours",
                          "verdict"} for r in rows)
    # each claim lands in its paper's section; the Wang–Isola checks of the large-batch file in
    # the alignment-and-uniformity one
    papers = {r["experiment"]: set() for r in rows}
    for r in rows:
        papers[r["experiment"]].add(r["paper"])
    assert papers["S0 annealing (double well on S¹)"] == {"annealing"}
    assert papers["Large-batch simulations"] == {"geometry", "au"}
    assert all(r["claim"].startswith("Wang–Isola") for r in rows if r["paper"] == "au")
    not_run = [r for r in rows if r["verdict"].startswith("not run")]
    assert [r["verdict"] for r in not_run] == ["not run (no reports/sims file)",
                                               "not run (not in simulation.experiments)"]
    claims = [r for r in rows if r["kind"] == "claim"]
    s0 = [r for r in claims if r["experiment"].startswith("S0")]
    assert s0[1]["claim"].startswith("Log schedule, c ≤ c*") and s0[1]["verdict"] == REPRODUCED
    assert s0[2]["verdict"] == REPRODUCED  # c > c*: log_c2 stays at 0.6
    fast = s0[3]  # sqrt plateaus; cosine_T1000 still cooling at T/10 may fall
    assert fast["verdict"] == REPRODUCED
    # a claim with one case carries it in the claim row, with no separate case row
    assert s0[0]["case"] == "—" and not any(r["claim"] == s0[0]["claim"] for r in rows
                                             if r["kind"] == "case")


def test_sims_context_is_none_without_files(tmp_path: Path):
    assert load_sims(tmp_path, list(SIM_EXPERIMENTS)) == {}
    assert sims_context({}, list(SIM_EXPERIMENTS)) is None
    (tmp_path / "s1.json").write_text(json.dumps(_s1()))
    loaded = load_sims(tmp_path, ["s1", "gibbs"])
    assert list(loaded) == ["s1"]
    ctx = sims_context(loaded, ["s1", "gibbs"])
    assert ctx is not None and ctx["present"] == ["s1"] and "s0" not in ctx


# ------------------------------------------------------------------------------------- figures
def test_figures_are_png():
    sims = _all()
    lb = sims["large_batch"]
    for png in (s0_trap_curves(sims["s0"]), s0_hazard_slopes(sims["s0"]),
                s1_trap_curves(sims["s1"]), hessian_scaling(sims["hessian"]),
                wang_isola_gaps(lb), large_batch_consistency(lb), gibbs_masses(sims["gibbs"]),
                modality_gap_curves(sims["modality_gap"])):
        assert png.startswith(PNG)


def test_sim_figures_follow_the_files():
    assert sim_figures({}) == {}
    assert set(sim_figures({"gibbs": _gibbs()})) == {"sim_gibbs"}


# ---------------------------------------------------------------------------------- rendering
def _context(sims: dict[str, Any] | None, figures: list[str]) -> dict[str, Any]:
    return {"title": "t", "summary": {}, "study": {k: [] for k in ("datasets", "backbones",
                                                                  "losses", "schedules", "seeds",
                                                                  "baselines")},
            "n_runs": 1, "verdicts": [], "comparison": [], "schedules": {}, "paired": {},
            "selection": {}, "provenance": {"versions": {}, "timings": []}, "tails": None,
            "figures": {k: "QUJD" for k in figures} | {"temperature": "", "au_plane": "",
                                                       "accuracy": "", "training": ""},
            "sims": sims,
            "claim_rows": _legacy_rows.sims_rows(sims["verdicts"]) if sims else []}


def test_section_renders_and_is_omitted_without_sims():
    sims = _all()
    # S1 and the Hessian render from report/sections/annealing_s1.py (its own tests)
    names = ["sim_s0_trap", "sim_s0_hazard", "sim_wang_isola", "sim_large_batch", "sim_gibbs",
             "sim_modality_gap"]
    html, md = render(_context(sims_context(sims, list(SIM_EXPERIMENTS)), names))
    title = "S0: annealing a double well with a known barrier"
    for text in (html, md):
        assert title in text and "not testable" in text and "collapsed encoder" in text
    # each experiment sits in its paper's section: annealing < geometry < alignment-uniformity
    at = {k: html.index(k) for k in ('id="annealing"', 'id="geometry"', 'id="au"',
                                     'id="pipeline"')}
    assert at['id="annealing"'] < html.index(title) < at['id="geometry"']
    assert at['id="geometry"'] < html.index("Gibbs equilibrium on S²") < at['id="au"']
    assert at['id="au"'] < html.index("Wang–Isola: deviation from the limit") < at['id="pipeline"']
    assert at['id="au"'] < html.index("The M → ∞ limit") < at['id="pipeline"']
    assert html.count("data:image/png;base64,QUJD") == len(names)
    for name in names:
        assert f"figures/{name}.png" in md
    # a "|" inside a Markdown cell is escaped, so every claim row keeps its five columns
    rows = [line for line in md.splitlines() if line.startswith("| S0 annealing")]
    assert rows and all(line.replace("\\|", "").count("|") == 7 for line in rows)
    html, md = render(_context(None, []))
    assert title not in html and title not in md
