"""The WEINCE link-theory section: every rule passes data that must pass it and fails data that
must fail it (FIXTURES, checked by tests/test_rules.py), and the claim rows follow the results
files — including files whose controls pass (inconclusive), whose claims fail, and files that
are missing (not run)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from infonce_lab.report.sections import weince_theory as wt
from infonce_lab.report.verdicts import Estimate, Outcome
from infonce_lab.simulation.link_theory import run_link_theory
from infonce_lab.tails.noise_floor import mean_estimate, noise_floor


def est(value: float, low: float, high: float) -> Estimate:
    return Estimate(value, low, high)


EXACT = est(0.004, 0.0, 0.012)          # an exact law at the default resolution
WRONG = est(0.09, 0.082, 0.098)         # the wrong-exponent control's distance
NON_AFFINE = est(0.22, 0.2199, 0.2201)  # the blend λ = 0.33's certified bound
AFFINE = est(1e-5, 0.0, 1e-5)           # undone by τ̃ = 2τ

FIXTURES: dict[str, tuple[Any, Any]] = {
    "link_match": (EXACT, WRONG),
    # passing: the claim matches and its control does not; failing: the claim itself is off
    "link_match_with_controls": (([EXACT, EXACT], [WRONG]), ([WRONG, EXACT], [WRONG])),
    "no_tau_undoes": (NON_AFFINE, AFFINE),
    # failing: the "non-affine" case is undone as well as the affine control is
    "no_tau_with_control": (([NON_AFFINE], [AFFINE]), ([AFFINE], [AFFINE])),
    # Weibit's n·MSE/c on its line, and a softmax-like MSE with a floor (n·MSE/c ≈ 65)
    "weibit_on_c_over_n": (est(0.99, 0.966, 1.016), est(65.0, 64.0, 66.0)),
    # the softmax at its floor, and a consistent estimator's MSE (Weibit's at n = 10⁴) in floor
    # units: it falls through the floor
    "softmax_at_floor": (est(1.03, 1.024, 1.036), est(0.0157, 0.0153, 0.0161)),
    # with the other estimator as the control: passing — each on its own line and the control
    # off it; failing — the claimed estimator is off its line
    "weibit_with_control": (([est(0.99, 0.966, 1.016)], [est(65.0, 64.0, 66.0)]),
                            ([est(65.0, 64.0, 66.0)], [est(65.0, 64.0, 66.0)])),
    "softmax_floor_with_control": (([est(1.03, 1.024, 1.036)], [est(0.0157, 0.0153, 0.0161)]),
                                   ([est(0.0157, 0.0153, 0.0161)], [est(0.0157, 0.0153, 0.0161)])),
}


def test_a_passing_control_makes_the_claim_inconclusive():
    v = wt.RULES["link_match_with_controls"].decide(([EXACT], [WRONG, EXACT]))
    assert v.outcome is Outcome.INCONCLUSIVE and "cannot tell" in v.why
    v = wt.RULES["no_tau_with_control"].decide(([NON_AFFINE], [NON_AFFINE]))
    assert v.outcome is Outcome.INCONCLUSIVE


def test_softmax_above_its_floor_band_is_not_yet_at_the_floor():
    v = wt.RULES["softmax_at_floor"].decide(est(1.32, 1.29, 1.34))  # n = 1000's ratio
    assert v.outcome is Outcome.INCONCLUSIVE and "not settled" in v.why
    # the row-level rule keeps the reason
    v = wt.RULES["softmax_floor_with_control"].decide(([est(1.32, 1.29, 1.34)],
                                                        [est(0.0157, 0.0153, 0.0161)]))
    assert v.outcome is Outcome.INCONCLUSIVE and "not settled" in v.why
    # a Weibit control that sat at the floor too: the rule could not tell a floor from none
    v = wt.RULES["softmax_floor_with_control"].decide(([est(1.03, 1.024, 1.036)],
                                                        [est(1.0, 0.98, 1.02)]))
    assert v.outcome is Outcome.INCONCLUSIVE and "controls pass too" in v.why


def test_undefined_estimate_is_inconclusive():
    v = wt.RULES["link_match"].decide(Estimate.missing("no trials"))
    assert v.outcome is Outcome.INCONCLUSIVE


# ------------------------------------------------------------------------- claim_rows on files
SMALL = {"score_low": -0.5, "score_high": 0.95, "seed": 3,
         "plackett_luce": {"candidates": 6, "sets": 3, "trials": 20_000, "tau": 0.2, "beta": 2.0,
                           "alpha": 5.0, "wrong_exponent": 1.5},
         "large_k": {"ks": [2, 256], "sets": 4, "trials": 30_000, "tau": 0.2},
         "mismatch": {"candidates": 8, "sets": 60, "taus": [0.2], "lambdas": [0.5],
                      "gap": 1e-4}}


@pytest.fixture(scope="module")
def link_file() -> dict[str, Any]:
    """A small real link_theory run (≈ 1 s), shaped as the simulate stage writes it."""
    return {"experiment": "link_theory", "params": SMALL, **run_link_theory(**SMALL)}


@pytest.fixture(scope="module")
def noise_file() -> dict[str, Any]:
    return {"params": {}, **noise_floor(ns=(200, 2000, 20000), replicates=6000, seed=5)}


def _by_claim(rows, start: str):
    hits = [r for r in rows if r.claim.startswith(start)]
    assert len(hits) == 1, [r.claim for r in rows]
    return hits[0]


def test_rows_on_a_small_real_run(link_file, noise_file):
    rows = wt.claim_rows(link_file, noise_file)
    assert len(rows) == 7
    assert all(r.section == "weince" and r.topic == wt.TOPIC and not r.self_check for r in rows)
    for start in ("§2.1", "Table 1, Weibull", "Table 1, Fréchet", "Thm 2.4", "Prop. C.3"):
        row = _by_claim(rows, start)
        assert row.verdict.outcome is Outcome.REPRODUCED, (start, row.result, row.verdict)
        controls = [c for c in row.cases if c.name.startswith("control")]
        assert controls and all(c.verdict.why == wt.CONTROL_OK for c in controls)
    weibit = [r for r in rows if r.claim.endswith("the Weibit part")][0]
    assert weibit.quantity.startswith("n·MSE/c")
    assert weibit.verdict.outcome is Outcome.REPRODUCED
    assert len(weibit.cases) == 4 and all("Holm" in c.p for c in weibit.cases[:3])
    softmax = [r for r in rows if r.claim.endswith("the softmax part")][0]
    # n = 20,000: the softmax variance term is ≈ 1.5% of its floor
    assert softmax.verdict.outcome is Outcome.REPRODUCED, softmax.result
    for row in (weibit, softmax):  # each estimator is the other's control, and fails
        assert row.cases[-1].name.startswith("control") and row.cases[-1].verdict.why == \
            wt.CONTROL_OK


def test_rows_follow_the_numbers_not_the_labels(link_file):
    """The Weibull row's winners relabelled as Gumbel's: the Gumbel row must fail, and a control
    that comes out close to its link makes a row inconclusive."""
    swapped = copy.deepcopy(link_file)
    pl = swapped["plackett_luce"]
    pl["gumbel"]["match"] = pl["gumbel"]["controls"]["rival_weibit"]
    rows = wt.claim_rows(swapped, None)
    assert _by_claim(rows, "§2.1").verdict.outcome is Outcome.NOT_REPRODUCED
    pl["gumbel"]["match"] = link_file["plackett_luce"]["gumbel"]["match"]
    pl["weibull"]["controls"]["wrong_exponent"] = pl["weibull"]["match"]
    row = _by_claim(wt.claim_rows(swapped, None), "Table 1, Weibull")
    assert row.verdict.outcome is Outcome.INCONCLUSIVE
    # Thm 2.4 with the K = 2 law at the largest K: not reproduced
    lk = swapped["large_k"]["weibull_domain"]["distance"]
    lk["256"] = lk["2"]
    assert _by_claim(wt.claim_rows(swapped, None), "Thm 2.4").verdict.outcome is \
        Outcome.NOT_REPRODUCED
    # Prop. C.3 with the blend's bound replaced by the affine control's
    cm = swapped["coordinate_mismatch"]
    cm["blend_0.5@tau=0.2"]["min_worst_tv"] = cm["affine@tau=0.2"]["min_worst_tv"]
    assert _by_claim(wt.claim_rows(swapped, None), "Prop. C.3").verdict.outcome is \
        Outcome.NOT_REPRODUCED


def _noise_with(ratios_w: dict[str, float], ratio_s: float) -> dict[str, Any]:
    def e(v: float) -> dict[str, Any]:
        return mean_estimate(np.random.default_rng(0).normal(v, v * 0.05, 400))
    ns = list(ratios_w)
    return {"c": 7.1, "softmax_floor": 0.045, "n": [int(n) for n in ns],
            "estimates": {"weibit_n_mse_over_c": {n: e(v) for n, v in ratios_w.items()},
                          "softmax_mse_over_floor": {n: e(ratio_s) for n in ns},
                          "mse_weibit": {n: e(0.001) for n in ns},
                          "mse_softmax": {n: e(0.05) for n in ns}}}


def test_noise_rows_fail_on_a_floor_and_on_no_floor():
    rows = wt.claim_rows(None, _noise_with({"100": 1.0, "1000": 4.0, "10000": 30.0}, 0.02))
    weibit, softmax = rows[-2], rows[-1]
    assert weibit.verdict.outcome is Outcome.NOT_REPRODUCED  # the Weibit MSE has a floor
    assert softmax.verdict.outcome is Outcome.NOT_REPRODUCED  # the softmax MSE has none
    rows = wt.claim_rows(None, _noise_with({"100": 1.0, "1000": 1.0}, 1.0))
    assert [r.verdict.outcome for r in rows[-2:]] == [Outcome.REPRODUCED] * 2


def test_missing_files_read_not_run():
    rows = wt.claim_rows(None, None)
    assert len(rows) == 7
    assert all(r.verdict.outcome is Outcome.NOT_RUN for r in rows)
    assert "link_theory" in rows[0].verdict.why and "noise_floor" in rows[-1].verdict.why
    old = {k: v for k, v in noise_floor(ns=(100,), replicates=50).items() if k != "estimates"}
    assert all(r.verdict.outcome is Outcome.NOT_RUN for r in wt.claim_rows(None, old)[-2:])


def test_undefined_noise_estimate_reads_inconclusive():
    nf = _noise_with({"100": 1.0, "1000": 1.0}, 1.0)
    nf["estimates"]["softmax_mse_over_floor"]["1000"] = {
        "value": None, "low": None, "high": None, "undefined": "3 of 400 replicates have no MLE"}
    row = wt.claim_rows(None, nf)[-1]
    assert row.verdict.outcome is Outcome.INCONCLUSIVE and "undefined" in row.verdict.why


def test_context_has_the_tables(link_file, noise_file):
    ctx = wt.context(link_file, noise_file)
    assert [r["model"] for r in ctx["table1"]] == ["gumbel", "weibull", "frechet"]
    assert any(r["control"] for r in ctx["mismatch"]) and ctx["noise"]["c"] > 0
    assert wt.context(None, None) == {"table1": [], "mismatch": [], "noise": None}
