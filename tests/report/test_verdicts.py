"""The verdict contract: every generic rule passes data that must pass it and fails data that
must fail it; Holm adjusts within a family; a simulation that moves with its step is not
converged; the statistics behind the rules agree with scipy/statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from infonce_lab.evaluation.stats import (
    TInference,
    block_pooled_difference,
    holm,
    ols_ci,
    t_mean,
)
from infonce_lab.report.verdicts import (
    Above,
    Below,
    Equivalent,
    Estimate,
    InRange,
    NonInferior,
    Outcome,
    all_cases,
    claim,
    converged,
    decide_family,
    fmt_p,
    inconclusive,
    not_reproduced,
    reproduced,
)


def est(value: float, half: float, **kw) -> Estimate:
    return Estimate(value, value - half, value + half, **kw)


def t_est(mean: float, se: float, df: int = 7) -> Estimate:
    return Estimate.from_t(TInference(mean, se, df, df + 1))


RULE_CASES = [
    # (rule, passing estimate, failing estimate, inconclusive estimate)
    (Above(0.0), est(0.5, 0.2), est(-0.5, 0.2), est(0.1, 0.3)),
    (Above(0.0, min_effect=1.0), est(0.5, 0.2), est(0.1, 0.2), est(0.8, 0.9)),
    (Below(0.0), est(-0.5, 0.2), est(0.5, 0.2), est(0.0, 0.3)),
    (Equivalent(0.1), est(0.01, 0.05), est(0.3, 0.1), est(0.08, 0.05)),
    (Equivalent(0.1, center=1.0), est(1.02, 0.05), est(0.7, 0.1), est(0.95, 0.1)),
    (NonInferior(0.01), est(-0.005, 0.004), est(-0.05, 0.01), est(0.0, 0.05)),
    (InRange(0.22, 0.36), est(0.3, 0.03), est(0.03, 0.02), est(0.2, 0.1)),
]


@pytest.mark.parametrize(("rule", "good", "bad", "unsure"), RULE_CASES)
def test_every_generic_rule_passes_fails_and_abstains(rule, good, bad, unsure):
    assert rule.decide(good).outcome is Outcome.REPRODUCED, rule.text
    assert rule.decide(bad).outcome is Outcome.NOT_REPRODUCED, rule.text
    assert rule.decide(unsure).outcome is Outcome.INCONCLUSIVE, rule.text
    assert "95% interval" in rule.text


def test_undefined_and_interval_free_estimates_decide_nothing():
    rule = Above(0.0)
    assert rule.decide(Estimate.missing("λ̂ on its boundary")).why.startswith("undefined")
    assert rule.decide(Estimate(0.4)).why == "no interval"
    assert Estimate.from_t(None).undefined == "one seed: no interval"


def test_t_inference_matches_scipy_one_sample_tests():
    x = np.array([0.4, 0.9, 0.1, 0.7, 0.3])
    t = t_mean(x)
    lo, hi = t.interval()
    ref = stats.ttest_1samp(x, 0.2)
    assert t.p_greater(0.2) == pytest.approx(stats.ttest_1samp(x, 0.2, alternative="greater").pvalue)
    assert t.p_less(0.2) == pytest.approx(stats.ttest_1samp(x, 0.2, alternative="less").pvalue)
    assert 2 * min(t.p_greater(0.2), t.p_less(0.2)) == pytest.approx(ref.pvalue)
    ci = stats.ttest_1samp(x, 0.0).confidence_interval()
    assert (lo, hi) == pytest.approx((ci.low, ci.high))
    # the interval rule and the p-value rule are the same decision
    e = Estimate.from_t(t)
    assert (e.low > 0.2) == (t.p_greater(0.2) < 0.025)


def test_tost_equals_statsmodels_ttost():
    from statsmodels.stats.weightstats import ttost_paired

    rng = np.random.default_rng(1)
    a, b = rng.normal(0.5, 1, 12), rng.normal(0.52, 1, 12)
    t = t_mean(list(a - b))
    rule = Equivalent(0.3)
    p_ref = ttost_paired(a, b, -0.3, 0.3)[0]
    assert rule.p_pass(Estimate.from_t(t)) == pytest.approx(p_ref)


def test_block_pooling_averages_within_seed_first():
    diffs = {"fixed": {1: 0.02, 2: 0.04, 3: 0.03}, "cosine": {1: 0.00, 2: 0.02, 3: 0.01}}
    t = block_pooled_difference(diffs)
    per_seed = [0.01, 0.03, 0.02]
    assert t.mean == pytest.approx(np.mean(per_seed))
    assert t.df == 2  # seeds − 1, not cells − blocks
    assert t.se == pytest.approx(np.std(per_seed, ddof=1) / math.sqrt(3))
    with pytest.raises(ValueError, match="different seeds"):
        block_pooled_difference({"a": {1: 0.1}, "b": {2: 0.1}})


def test_holm_against_hand_computation():
    p = [0.01, 0.04, None, 0.03]
    # sorted 0.01, 0.03, 0.04 → ×3, ×2, ×1, running max
    assert holm(p) == pytest.approx([0.03, 0.06, None, 0.06])


def test_holm_equals_statsmodels_bit_for_bit():
    """The hand-written step-down (it skips statsmodels' gc.collect per call) gives statsmodels'
    floats exactly: ties, p-values that saturate at 1, one p-value, and gaps left by None."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    cases = [rng.uniform(0, 1, n) for n in (1, 2, 5, 17, 60)]
    cases += [np.array([0.01, 0.01, 0.2, 0.01, 0.5]), rng.uniform(0, 1e-3, 9),
              np.array([0.3, 0.9, 0.6])]
    for p in cases:
        want = multipletests(p, method="holm")[1]
        assert holm(list(p)) == [float(q) for q in want]
        with_gaps = holm([None, *p.tolist(), None])
        assert with_gaps[0] is None and with_gaps[-1] is None
        assert with_gaps[1:-1] == [float(q) for q in want]


def test_family_is_holm_adjusted_both_ways():
    # three cases whose raw one-sided p is just under 0.025: alone each would pass; Holm makes
    # the weakest two inconclusive
    se = 1.0
    t_crit = stats.t.isf(0.02, df=7)
    ests = [t_est(10.0, se), t_est(t_crit, se), t_est(t_crit, se)]
    cases = decide_family(Above(0.0), ests, ["a", "b", "c"])
    assert [c.verdict.outcome for c in cases] == [Outcome.REPRODUCED, Outcome.INCONCLUSIVE,
                                                  Outcome.INCONCLUSIVE]
    assert "Holm" in cases[1].p
    assert "Holm-adjusted p" in cases[1].verdict.why  # the reason is the adjustment, not the width
    alone = decide_family(Above(0.0), ests[1:2], ["b"])
    assert alone[0].verdict.outcome is Outcome.REPRODUCED and "Holm" not in alone[0].p
    # the failing direction is adjusted too
    bad = decide_family(Above(0.0), [t_est(-10.0, se), t_est(-t_crit, se), t_est(-t_crit, se)],
                        ["a", "b", "c"])
    assert [c.verdict.outcome for c in bad] == [Outcome.NOT_REPRODUCED, Outcome.INCONCLUSIVE,
                                                Outcome.INCONCLUSIVE]
    assert "against the claim" in bad[1].verdict.why


def test_all_cases_combination():
    r, n, i = reproduced(), not_reproduced(), inconclusive("x")
    assert all_cases([r, r]).outcome is Outcome.REPRODUCED
    assert all_cases([r, n, i]).outcome is Outcome.NOT_REPRODUCED
    assert "1 of 3" in all_cases([r, n, i]).why
    assert all_cases([r, i]).outcome is Outcome.INCONCLUSIVE
    assert all_cases([i, i]) == i


def test_convergence_check():
    rule = Above(0.0)
    same = converged(est(0.5, 0.1), est(0.52, 0.1), rule)
    assert same[0].outcome is Outcome.REPRODUCED and "half step" in same[1]
    moved = converged(est(0.5, 0.05), est(0.9, 0.05), rule)
    assert moved[0].outcome is Outcome.INCONCLUSIVE and "not converged" in moved[0].why
    flipped = converged(est(0.15, 0.1), est(0.05, 0.1), rule)
    assert flipped[0].outcome is Outcome.INCONCLUSIVE and "not converged" in flipped[0].why


def test_claim_row_folds_a_single_case():
    case = decide_family(Above(0.0), [est(0.5, 0.1)], ["only"])
    row = claim("weince", "t", "c", "q", Above(0.0), case)
    assert row.cases == [] and row.result == case[0].result
    two = claim("weince", "t", "c", "q", Above(0.0),
                decide_family(Above(0.0), [est(0.5, 0.1), est(-0.5, 0.1)], ["a", "b"]))
    assert len(two.cases) == 2 and two.verdict.outcome is Outcome.NOT_REPRODUCED
    assert "1 reproduced · 1 not" in two.result


def test_bootstrap_floor_prints_as_a_bound():
    assert fmt_p(1 / 40, floor=1 / 40).startswith("≤ 0.025")
    assert fmt_p(0.3, floor=1 / 40) == "0.300"


def test_cluster_robust_ols_uses_cluster_degrees_of_freedom():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(9), 2)
    x = rng.normal(size=(18, 2)) + rng.normal(size=(9, 2))[groups]
    y = x @ np.array([1.0, -2.0]) + rng.normal(size=9)[groups] + 0.1 * rng.normal(size=18)
    plain = ols_ci(x, y)
    clustered = ols_ci(x, y, groups=groups)
    assert plain["dof"] == 15 and clustered["dof"] == 8 and clustered["clusters"] == 9
    assert clustered["coef"] == pytest.approx(plain["coef"])
    lr = stats.linregress(x[:, 0], y)
    one = ols_ci(x[:, :1], y)
    assert one["coef"][0] == pytest.approx(lr.slope) and one["se"][0] == pytest.approx(lr.stderr)


def test_minimal_detectable_effect_has_the_power_it_claims():
    from scipy import stats as st

    # At the MDE, the noncentral t (nc = MDE/se) crosses the two-sided critical value with
    # probability 0.8: scipy's nct, independent of statsmodels' solver.
    for values in ([0.01, 0.03], [0.02, -0.01, 0.04], list(np.linspace(-0.02, 0.05, 8))):
        t = t_mean(values)
        mde = t.minimal_detectable_effect(power=0.8, alpha=0.05)
        crit = st.t.ppf(0.975, t.df)
        nc = mde / t.se
        power = st.nct.sf(crit, t.df, nc) + st.nct.cdf(-crit, t.df, nc)
        assert power == pytest.approx(0.8, abs=1e-6)
    assert t_mean([0.0, 0.1]).minimal_detectable_effect() > 10 * np.std([0.0, 0.1], ddof=1)


def test_claims_are_declared_with_their_rules_and_build_every_row() -> None:
    from infonce_lab.report.verdicts import Check, Claim, claims

    rules = {"up": Above(0.0, what="gain"), "ok": Check("flag set", lambda x: (
        reproduced() if x else not_reproduced()))}
    declared = claims("s", "t", rules, {"up": ("it rises (§1)", "gain"), "ok": ("a flag", "flag")})
    assert all(isinstance(c, Claim) for c in declared.values())
    with pytest.raises(KeyError, match="nope"):
        claims("s", "t", rules, {"nope": ("a sentence", "q")})
    row = declared["up"].family([Estimate(0.5, 0.2, 0.8), Estimate(0.3, -0.1, 0.7)], ["a", "b"])
    assert (row.claim, row.rule, row.verdict.outcome) == (
        "it rises (§1)", rules["up"].text, Outcome.INCONCLUSIVE)
    with pytest.raises(TypeError):
        declared["ok"].family([Estimate(0.5, 0.2, 0.8)], ["a"])
    checked = declared["ok"].checked([("a", True, "set"), ("b", False, "unset")])
    assert checked.verdict.outcome is Outcome.NOT_REPRODUCED and checked.rule == "flag set"
    skipped = declared["up"].with_quantity(" (x)").not_run("run it")
    assert (skipped.quantity, str(skipped.verdict)) == ("gain (x)", "not run: run it")


def test_a_declared_self_check_stays_one_run_or_not() -> None:
    from infonce_lab.report.sections import geometry
    from infonce_lab.report.verdicts import claims

    rules = {"ours": Above(0.0, what="gap"), "theirs": Above(0.0, what="gain")}
    declared = claims("s", "t", rules, {"ours": ("our derivation", "gap"),
                                       "theirs": ("the paper's claim", "gain")},
                      self_checks=("ours",))
    with pytest.raises(KeyError, match="typo"):
        claims("s", "t", rules, {"ours": ("x", "q")}, self_checks=("typo",))
    ran = declared["ours"].family([Estimate(0.5, 0.2, 0.8)], ["a"])
    assert ran.self_check and declared["ours"].not_run("run it").self_check
    assert not declared["theirs"].not_run("run it").self_check
    # the geometry section's checks of its own derivations, with none of their results files
    kinds = {r.claim: r.self_check for r in geometry.claim_rows({})}
    assert kinds[geometry.LB_CLAIMS["value_rate"].text]
    assert kinds[geometry.MG_CLAIMS["mg_diagnosis"].text]
    assert kinds[geometry.GIBBS_CLAIMS["bandwidth"].text]
    assert not kinds[geometry.LB_CLAIMS["wi_limit"].text]


def test_a_claim_declared_untestable_reads_so_and_takes_no_verdict() -> None:
    from infonce_lab.report.findings import counted
    from infonce_lab.report.verdicts import claims

    rules = {"max": Above(0.0, what="rise")}
    with pytest.raises(KeyError, match="typo"):
        claims("s", "t", rules, {"max": ("x", "q")}, untestable={"typo": "why"})
    c = claims("s", "t", rules, {"max": ("ΔE_max rises", "one basin's rise")},
               untestable={"max": "one basin bounds no maximum"})["max"]
    for e in (Estimate(0.5, 0.2, 0.8), Estimate(-0.5, -0.8, -0.2)):  # passes, fails the rule
        row = c.family([e], ["a"])
        assert row.verdict.outcome is Outcome.NOT_TESTABLE and not counted(row)
        assert str(row.verdict) == "not testable here: one basin bounds no maximum"
    with pytest.raises(TypeError, match="untestable"):
        c.row([], verdict=reproduced())
