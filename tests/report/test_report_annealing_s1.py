"""The S1 / Hessian / landscape rows of the annealing section: every rule passes data that must
pass it and fails data that must fail it (FIXTURES, checked by tests/test_rules.py), and the rows
built from small synthetic results files — and from a tiny real run — decide as they must."""

from __future__ import annotations

import copy
import math

import pytest

from infonce_lab.report.findings import counted
from infonce_lab.report.sections import annealing_s1 as sec
from infonce_lab.report.verdicts import Estimate, Outcome
from infonce_lab.simulation.s1 import proportion, proportion_difference
from sim_params import section


def _est(value: float, low: float, high: float) -> Estimate:
    return Estimate(value, low, high)


def _c2(violations: int, if_u0: float = 0.0) -> dict:
    return {"starts": 200, "minimizers": 199, "violations": violations,
            "u0_max_certified": 0.0, "min_positive_sim": -0.33 if violations else 0.9999995,
            "median_min_positive_sim": 0.4, "s_max": 1.0, "uniform_fraction": 0.11,
            "if_configs": 100, "if_u0_max": if_u0}


# (passing input, failing input) per rule id. The failing inputs are the data a wrong claim
# would produce: e.g. the c/c* = 0.5 run (nothing trapped) asked "does it trap?".
FIXTURES = {
    "s1_watershed": ({"value": 0.06245, "exact": 0.0625, "coarse": 0.06088},  # 128³, 64³
                     {"value": 0.0702, "exact": 0.0625, "coarse": 0.0711}),
    "p1_traps_more": (_est(0.305, 0.238, 0.373), _est(-0.3, -0.4, -0.2)),
    # P2, c/c* = 0.5: 0 of 200 trapped at T (Wilson [0, 0.019]) vs c/c* = 2: 59 of 200.
    "p2_escapes": (_est(0.0, 0.0, 0.019), _est(0.295, 0.236, 0.362)),
    # P1, c/c* = 0.5 held at t = 50: 62 of 200 trapped fails "escapes"
    "p1_escapes": (_est(0.0, 0.0, 0.019), _est(0.31, 0.25, 0.377)),
    "p1_traps": (_est(1.0, 0.981, 1.0), _est(0.0, 0.0, 0.019)),
    "p2_traps": (_est(0.295, 0.236, 0.362), _est(0.0, 0.0, 0.019)),
    "negatives_barrier": (
        [{"negatives": 2, "low": 0.06, "high": 0.063}, {"negatives": 4, "low": 0.08, "high": 0.09}],
        [{"negatives": 2, "low": 0.0625, "high": 0.0625},
         {"negatives": 4, "low": 0.0109, "high": 0.0114}]),
    "fd_formula": ({"step": 4e-6, "half_step": 1.4e-6}, {"step": 3e-2, "half_step": 2e-2}),
    "hessian_at_least_linear": (1.0001, 0.4),
    "hessian_linear": (0.9998, 2.0),  # the tied trap's β² fails "∝ β"
    "hessian_tie_quadratic": (2.0, 1.0),
    "hessian_coefficient": ({"min": 0.99999, "max": 1.00001}, {"min": 0.5, "max": 1.0}),
    # O(1/β) as the proof says / a tie's covariance that does not decay
    "hessian_cov_rate": (Estimate(-1.02, -1.02, -1.02), Estimate(0.0, 0.0, 0.0)),
    "hessian_vanishes": ({"norms": [0.34, 1e-3, 1e-40, 3.7e-167], "decay_rate": 1.95},
                         {"norms": [0.3, 2.0, 40.0], "decay_rate": -0.01}),
    "prop_c2": (_c2(0), _c2(199)),
}


def test_watershed_and_fd_abstain_when_the_refinement_moves_them():
    assert sec.RULES["s1_watershed"].decide(
        {"value": 0.0624, "exact": 0.0625, "coarse": 0.071}).outcome is Outcome.INCONCLUSIVE
    assert sec.RULES["s1_watershed"].decide(  # refining moved it away from κ_s/16
        {"value": 0.0610, "exact": 0.0625, "coarse": 0.0624}).outcome is Outcome.INCONCLUSIVE
    assert sec.RULES["fd_formula"].decide(
        {"step": 2e-5, "half_step": 3e-6}).outcome is Outcome.INCONCLUSIVE
    assert sec.RULES["negatives_barrier"].decide(
        [{"negatives": 2, "low": 0.05, "high": 0.07}, {"negatives": 4, "low": 0.06, "high": 0.08}]
    ).outcome is Outcome.INCONCLUSIVE
    assert sec.RULES["prop_c2"].decide({**_c2(0), "minimizers": 0}).outcome is Outcome.INCONCLUSIVE


# --------------------------------------------------------------------------- synthetic files
CHAINS = 200
NAMES = ["log c/c*=0.5", "log c/c*=1", "log c/c*=2", "sqrt"]


def _curve(name: str, k_end: int, t_end: float) -> dict:
    p = proportion(k_end, CHAINS)
    return {"name": name, "t": [0.0, t_end], "n": CHAINS, "p_trap": [1.0, p["value"]],
            "trap_ci": [[1.0, p["low"]], [1.0, p["high"]]], "p_surv": [1.0, p["value"]],
            "surv_ci": [[1.0, p["low"]], [1.0, p["high"]]], "p_trap_end": p["value"],
            "p_trap_end_ci": [p["low"], p["high"]], "hazard_slope": None}


def synthetic_s1(p1: dict[str, int], p2_t1: dict[str, int], p2_end: dict[str, int],
                 half_shift: int = 0) -> dict:
    """An s1.json with given trapped counts (P1 at its horizon T, P2 at t1 — where D.7(i)
    compares — and at T); the half-step run has the same counts moved by ``half_shift``."""
    t1, T = 5.0, 100.0

    def k(counts: dict[str, int], name: str, res: str) -> int:
        return min(CHAINS, max(0, counts[name] + (half_shift if res == "half_step" else 0)))

    out = {
        "barrier": {"delta_e_max_u0": 0.06245, "delta_e_max_f": 0.0451, "c_star": 16.01,
                    "c_star_f": 22.2, "grid": 128, "beta_bar": 20.0, "kappa_s": 1.0,
                    "trap_u0": 1.0, "trap_barrier_u0": 0.06245, "trap_barrier_f": 0.0451,
                    "exact_u0": 0.0625, "grid_step": 0.049, "grid_coarse": 64,
                    "delta_e_max_u0_coarse": 0.0624},
        "chains": CHAINS, "horizon": T, "horizon_p1": T, "c_ratios": [0.5, 1.0, 2.0],
        "check_times": [t1, T], "K": math.e, "dt": 0.01,
        "sqrt": {"outruns": 2.0, "beta0": 32.0, "rate": 15.62},
        "convergence": {"dt_max": 0.01, "dt_max_half": 0.005, "h": {"P1": 0.5, "P2": 0.4},
                        "h_half": {"P1": 0.25, "P2": 0.2}, "steps": {}, "chain_steps": 0},
        "p1_minus_p2": {}, "p2_vs_gibbs": {}, "p1_vs_gibbs": {},
        "hold": {"after": t1, "crossings": 0.1, "exit_barrier_u0": 0.06245, "candidates": 3},
    }
    for res, key in (("step", "dynamics"), ("half_step", "half_step")):
        out[key] = {"P2": [_curve(n, k(p2_end, n, res), T) for n in NAMES],
                    "P1": [_curve(n, k(p1, n, res), T) for n in NAMES]}
    for n in NAMES:
        out["p1_minus_p2"][n] = {r: proportion_difference(k(p1, n, r), CHAINS, k(p2_t1, n, r),
                                                          CHAINS) for r in ("step", "half_step")}
        out["p1_minus_p2"][n]["t"] = t1
        ratio = float(n.split("=")[1]) if n.startswith("log") else None
        for dyn, counts in (("p1", p1), ("p2", p2_end)):
            entry = {"t": T, "beta": 40.0, "gibbs_trap_mass": 1e-20, "c_ratio": ratio}
            for r in ("step", "half_step"):
                p = proportion(k(counts, n, r), CHAINS)
                entry[r] = {**p, "value": p["value"] - 1e-20, "low": p["low"] - 1e-20,
                            "high": p["high"] - 1e-20}
                entry[f"p_trap_{r}"] = p
                entry[f"p_trap_tenth_{r}"] = p
                entry[f"held_at_{r}"] = t1 if dyn == "p1" else None
            out[f"{dyn}_vs_gibbs"][n] = entry
    return out


DEFAULT_COUNTS = ({"log c/c*=0.5": 64, "log c/c*=1": 200, "log c/c*=2": 200, "sqrt": 200},
                  {"log c/c*=0.5": 3, "log c/c*=1": 15, "log c/c*=2": 97, "sqrt": 6},
                  {"log c/c*=0.5": 0, "log c/c*=1": 0, "log c/c*=2": 59, "sqrt": 0})


def synthetic_hessian() -> dict:
    cfg = {"betas": [1.0, 100.0, 200.0], "u0": 1.0, "norm_full": [1.0, 1e4, 4e4],
           "slope_full": 2.0, "slope_full_top": 2.0, "fd_rel_err_max": 1e-7,
           "fd_rel_err_max_half": 1e-8, "decay_rate_full_top": -0.01, "min_margin": -1.0,
           "top2_margin": 0.0}
    minim = {**cfg, "name": "s1_minimizer", "u0": 0.0, "norm_full": [0.3, 1e-80, 1e-167],
             "decay_rate_full_top": 1.95, "min_margin": 1.96}
    slopes = {"mean": 1.0, "q05": -0.6, "q25": 1.0, "median": 1.0, "q75": 1.03, "q95": 1.96}
    return {
        "configs": [{**cfg, "name": "s1_trap"}, minim],
        "random": {"count": 10, "slope_full_top": slopes, "slope_full": slopes,
                   "fd_rel_err_max": 1e-6, "per_config": []},
        "asymptotic": {"margin_factor": 30.0, "beta_cap": 1e4, "count": 9, "excluded": 1,
                       "slope_min": 0.9998, "slope_max": 1.0001, "beta1_max": 5000.0,
                       "coeff_ratio_min": 0.99999, "coeff_ratio_max": 1.00001, "anchors": 40,
                       "perturbed_trap": {"beta1": 200.0, "margin": 0.2, "slope": 1.0,
                                          "coeff_ratio": [1.0]}},
        "covariance": {"s1_trap": 0.0, "random_min": -104.0, "random_max": -43.3, "count": 9},
        "fd": {"rel_err_max": {"step": 4e-6, "half_step": 1.4e-6}, "configs": 12,
               "betas": [1.0, 100.0, 200.0]},
    }


def synthetic_landscape() -> dict:
    """The prop_c2 and negatives experiments' files."""
    return {
        "prop_c2": {"tol": 1e-3, "settings": {"S1": _c2(199), "(S²)^6": _c2(200)}},
        "negatives": {"beta_bar": 50.0, "beta_bar_check": 100.0, "rows": [
            {"n_pairs": 2, "negatives": 2,
             "step": {"u0_barrier": 0.0625, "is_minimum": True},
             "half_step": {"u0_barrier": 0.0625, "is_minimum": True}},
            {"n_pairs": 3, "negatives": 4,
             "step": {"u0_barrier": 0.0114, "is_minimum": True},
             "half_step": {"u0_barrier": 0.0109, "is_minimum": True}}]},
    }


def synthetic_sims() -> dict:
    return {"s1": synthetic_s1(*DEFAULT_COUNTS), "hessian": synthetic_hessian(),
            **synthetic_landscape()}


def _find(rows, start: str):
    return next(r for r in rows if r.claim.startswith(start))


P2 = sec._FOR_P2  # the P2 rows: the paper's statements, qualified as holding for P2 only


def test_a_fast_schedule_that_keeps_chains_trapped_reproduces_the_risk():
    p1, p2_t1, p2_end = DEFAULT_COUNTS
    sims = {**synthetic_sims(), "s1": synthetic_s1(p1, p2_t1, {**p2_end, "sqrt": 59})}
    fast = _find(sec.claim_rows(sims), P2 + "App. A.6")
    assert fast.verdict.outcome is Outcome.REPRODUCED, fast.verdict
    # and P1's √t run emptying the trap fails the paper's row
    sims = {**synthetic_sims(), "s1": synthetic_s1({**p1, "sqrt": 0}, p2_t1, p2_end)}
    fast = _find(sec.claim_rows(sims), "App. A.6")
    assert fast.verdict.outcome is Outcome.NOT_REPRODUCED, fast.verdict


def test_a_file_before_the_outrunning_sqrt_schedule_leaves_its_row_not_run():
    sims = synthetic_sims()
    del sims["s1"]["sqrt"]
    fast = _find(sec.claim_rows(sims), "App. A.6")
    assert fast.verdict.outcome is Outcome.NOT_RUN and "re-run simulate@s1" in fast.verdict.why


def test_an_untestable_claim_reads_so_whatever_its_data():
    for barrier in (0.0114, 0.2):  # this family's barrier falls, then rises
        sims = synthetic_sims()
        for res in ("step", "half_step"):
            sims["negatives"]["rows"][1][res]["u0_barrier"] = barrier
        row = _find(sec.claim_rows(sims), "App. A.2")
        assert row.verdict.outcome is Outcome.NOT_TESTABLE and not counted(row)


def test_rows_on_the_expected_data():
    rows = sec.claim_rows(synthetic_sims())
    assert {r.section for r in rows} == {"annealing"}
    by_verdict = {r.claim[:40]: r.verdict.outcome for r in rows}
    assert all(v is not Outcome.NOT_RUN for v in by_verdict.values())
    assert _find(rows, "Our analysis (D.7(i))").verdict.outcome is Outcome.REPRODUCED
    # SDE (3) as written (P1): c ≤ c* keeps 64 and 200 of 200 trapped: the theorem fails there
    thm = _find(rows, "Thm. 3.2")
    assert thm.verdict.outcome is Outcome.NOT_REPRODUCED and not thm.self_check
    assert _find(rows, "Prop. 3.3").verdict.outcome is Outcome.REPRODUCED
    assert _find(rows, "App. A.6").verdict.outcome is Outcome.REPRODUCED  # P1's √t run
    # the normalised dynamics (P2): reproduced, as qualifying self-checks
    for start in ("Thm. 3.2", "Prop. 3.3"):
        row = _find(rows, P2 + start)
        assert row.verdict.outcome is Outcome.REPRODUCED and row.self_check and row.qualifies
    assert _find(rows, "Lemma C.3").verdict.outcome is Outcome.REPRODUCED
    fast = _find(rows, P2 + "App. A.6")  # P2's √t run empties the trap (0 of 200 at T)
    assert fast.verdict.outcome is Outcome.NOT_REPRODUCED, fast.verdict
    c2 = _find(rows, "Prop. C.2")
    assert c2.verdict.outcome is Outcome.NOT_REPRODUCED and "only if" in c2.verdict.why
    a2 = _find(rows, "App. A.2")  # declared untestable: shown, with its family's trend
    assert a2.verdict.outcome is Outcome.NOT_TESTABLE and "falls" in a2.note
    # Self-checks: the watershed value, the FD check and our own analysis (D.7), never a claim
    # of the paper; the paper's claims are exactly the rest.
    ours = ("Our d", "Our check", "Our analysis", "At a global minimizer")
    assert all(r.self_check == r.claim.startswith(ours) for r in rows), [
        r.claim[:40] for r in rows if r.self_check != r.claim.startswith(ours)]
    # The page shows both runs of every simulated case.
    for case in _find(rows, "Thm. 3.2").cases:
        assert "step:" in case.result and "half step:" in case.result


def test_swapped_labels_change_the_verdicts():
    """The c/c* = 0.5 data labelled c/c* = 2 and vice versa must fail both P2 claims."""
    p1, p2_t1, p2_end = copy.deepcopy(DEFAULT_COUNTS)
    p2_end["log c/c*=0.5"], p2_end["log c/c*=2"] = p2_end["log c/c*=2"], p2_end["log c/c*=0.5"]
    rows = sec.claim_rows({"s1": synthetic_s1(p1, p2_t1, p2_end)})
    assert _find(rows, P2 + "Thm. 3.2").verdict.outcome is Outcome.NOT_REPRODUCED
    assert _find(rows, P2 + "Prop. 3.3").verdict.outcome is Outcome.NOT_REPRODUCED


def test_p1_rows_fail_on_the_data_of_the_other_claim():
    """P1 escaping at c ≤ c* passes Thm. 3.2; P1 escaping at c = 2c* fails Prop. 3.3."""
    p1, p2_t1, p2_end = copy.deepcopy(DEFAULT_COUNTS)
    rows = sec.claim_rows({"s1": synthetic_s1({n: 0 for n in p1}, p2_t1, p2_end)})
    assert _find(rows, "Thm. 3.2").verdict.outcome is Outcome.REPRODUCED
    assert _find(rows, "Prop. 3.3").verdict.outcome is Outcome.NOT_REPRODUCED
    assert "held from t = 5" in _find(rows, "Prop. 3.3").result  # one case: shown as the result


def test_p2_trapping_more_than_p1_fails_d7i():
    p1, p2_t1, p2_end = copy.deepcopy(DEFAULT_COUNTS)
    p1 = {n: 0 for n in p1}
    p2_t1 = {n: 150 for n in p2_t1}
    rows = sec.claim_rows({"s1": synthetic_s1(p1, p2_t1, p2_end)})
    assert _find(rows, "Our analysis (D.7(i))").verdict.outcome is Outcome.NOT_REPRODUCED


def test_a_step_dependent_result_is_not_converged():
    rows = sec.claim_rows({"s1": synthetic_s1(*DEFAULT_COUNTS, half_shift=60)})
    row = _find(rows, P2 + "Prop. 3.3")
    assert row.verdict.outcome is Outcome.INCONCLUSIVE and "not converged" in row.verdict.why


def test_missing_files_are_not_run():
    rows = sec.claim_rows({})
    assert rows and all(r.verdict.outcome is Outcome.NOT_RUN for r in rows)
    only_s1 = sec.claim_rows({"s1": synthetic_s1(*DEFAULT_COUNTS)})
    assert _find(only_s1, "Prop. C.2").verdict.outcome is Outcome.NOT_RUN


def test_context_tables():
    ctx = sec.context(synthetic_sims())
    assert len(ctx["s1"]["table"]) == 2 * 2 * len(NAMES)  # resolution × dynamics × schedule
    assert {r["resolution"] for r in ctx["s1"]["table"]} == {"step", "half step"}
    assert [r["negatives"] for r in ctx["negatives"]] == [2, 4]


# ---------------------------------------------------------------------------- a tiny real run
def test_rows_from_a_tiny_real_run():
    from infonce_lab.simulation.hessian import run_hessian
    from infonce_lab.simulation.minimizers import run_prop_c2
    from infonce_lab.simulation.negatives import run_negatives
    from infonce_lab.simulation.s1 import run_s1

    s1 = run_s1(**section(
        "s1", grid=32, chains=40, horizon=4.0, horizon_p1=1.0, hold_after=1.0, first_check=1.0,
        c_ratios=(0.5, 2.0), h_p1=1.0))
    h = run_hessian(**section("hessian", n_random=4, betas=(1, 10, 100, 200)))
    neg = run_negatives(**section("negatives", n_pairs=(2, 3)))
    c2 = run_prop_c2(**section("prop_c2", starts=20, uniform=500))
    rows = sec.claim_rows({"s1": s1, "hessian": h, "prop_c2": c2, "negatives": neg})
    assert all(r.verdict.outcome is not Outcome.NOT_RUN for r in rows)
    fd = _find(rows, "Our check")
    assert fd.self_check and fd.verdict.outcome is Outcome.REPRODUCED
    assert _find(rows, "Prop. C.2").verdict.outcome is Outcome.NOT_REPRODUCED
    a2 = _find(rows, "App. A.2").verdict  # one trap family's barrier bounds no maximum
    assert a2.outcome is Outcome.NOT_TESTABLE and "one trap family" in a2.why
    assert _find(rows, "Lemma C.3").verdict.outcome is Outcome.REPRODUCED
    neg = neg["rows"]
    assert neg[0]["step"]["u0_barrier"] == pytest.approx(1 / 16, abs=1e-4)  # the S1 watershed


def test_the_covariance_rate_is_decided_both_ways():
    sims = synthetic_sims()
    row = _find(sec.claim_rows(sims), "Lemma C.3's proof")
    assert row.verdict.outcome is Outcome.NOT_REPRODUCED and len(row.cases) == 3
    sims["hessian"]["covariance"] = {"s1_trap": -1.0, "random_min": -1.1, "random_max": -0.9,
                                     "count": 9}
    assert _find(sec.claim_rows(sims), "Lemma C.3's proof").verdict.outcome is Outcome.REPRODUCED
    del sims["hessian"]["covariance"]
    assert _find(sec.claim_rows(sims), "Lemma C.3's proof").verdict.outcome is Outcome.NOT_RUN


def test_a_p1_run_not_held_by_its_horizon_decides_nothing():
    """P1's rows are about t → ∞: a case whose chains still moved (not held) is not converged."""
    sims = synthetic_sims()
    for entry in sims["s1"]["p1_vs_gibbs"].values():
        entry["held_at_half_step"] = None
    rows = sec.claim_rows(sims)
    for start in ("Thm. 3.2", "Prop. 3.3", "App. A.6"):
        row = _find(rows, start)
        assert row.verdict.outcome is Outcome.INCONCLUSIVE, (start, row.verdict)
        assert "not held by T" in str(row.verdict) or any(
            "not held by T" in str(c.verdict) for c in row.cases)
