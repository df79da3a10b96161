"""The WEINCE tail-diagnostics section: every rule on inputs that must pass it and inputs that must
fail it (FIXTURES, checked by tests/test_rules.py), and ``claim_rows`` on small synthetic
summaries shaped like ``summary.json["tails"]`` — per-seed values, undefined estimates, counted
and context configurations, one seed and several."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from infonce_lab.evaluation import tail_estimates as te
from infonce_lab.evaluation.stats import TInference
from infonce_lab.report.sections import weince_tails as wt
from infonce_lab.report.verdicts import Estimate, Outcome


def est(value: float, half: float) -> Estimate:
    return Estimate(value, value - half, value + half)


def t_est(mean: float, se: float, df: int = 5) -> Estimate:
    return Estimate.from_t(TInference(mean, se, df, df + 1))


def exp_run(xi: Estimate, p_holm: float | None, seed: str = "1", lrt: float = 400.0,
            deff: float = 2.0) -> dict[str, Any]:
    """One run's input to the GPD-vs-exponential rule (its p-values as the row builds them)."""
    return {"seed": seed, "lrt": lrt, "deff": deff, "adjusted": lrt / deff, "p": p_holm,
            "p_holm": p_holm, "xi": xi}


FIXTURES: dict[str, tuple[Any, Any]] = {
    # Weibull domain, endpoint 0.3% of the tail window below the cap / a bounded tail that ends
    # at 0.95 with u = 0.90: half the window short of the cap (a finite endpoint, not the cap)
    "pot_endpoint_at_cap": ({"xi": est(-0.45, 0.03), "gap": est(0.03, 0.02)},
                            {"xi": est(-0.45, 0.03), "gap": est(0.5, 0.05)}),
    "pot_xi_magnitude": (est(-0.40, 0.03), est(-0.60, 0.03)),
    # ξ = 0 rejected with ξ̂ = −0.45 / an exponential tail: not rejected, ξ̂'s interval inside ±0.04
    "pot_beats_exponential": ({"runs": [exp_run(est(-0.45, 0.04), 1e-30),
                                        exp_run(est(-0.40, 0.04), 1e-25, "2")]},
                              {"runs": [exp_run(est(-0.01, 0.04), 0.6, lrt=0.5, deff=1.0)]}),
    "link_gain": (est(0.25, 0.05), est(-0.01, 0.005)),
    # the paper's Δ̄ / the default study's ≈ 0.03 nats
    "link_delta_magnitude": (est(0.30, 0.03), est(0.03, 0.01)),
    "link_lambda_magnitude": (est(0.40, 0.05), est(0.19, 0.05)),
    "link_stable": ({"early": est(0.30, 0.05), "late": est(0.31, 0.05), "change": est(0.01, 0.03)},
                    {"early": est(0.30, 0.05), "late": est(0.05, 0.02),
                     "change": est(-0.25, 0.05)}),
    "frechet_none": ({"lambda_f": est(-0.02, 0.05), "r2": 0.5},
                     {"lambda_f": est(0.40, 0.10), "r2": 0.5}),
    "frechet_alone": (est(0.001, 0.01), est(0.20, 0.05)),
    "hardness_dilutes": (est(-0.30, 0.05), est(0.20, 0.05)),
    "pool_raises_lambda": (est(0.30, 0.05), est(-0.20, 0.05)),
    "allocation_closer": (est(0.18, 0.04), est(-0.10, 0.03)),
    "low_tau_concentrates": ({"share": est(0.70, 0.05), "rises": [est(0.1, 0.01)] * 3},
                             {"share": est(0.20, 0.02), "rises": [est(0.1, 0.01)] * 3}),
}


# ------------------------------------------------------------------------------ rule details
def test_endpoint_rule_fails_without_a_finite_endpoint_and_abstains_when_undefined():
    rule = wt.RULES["pot_endpoint_at_cap"]
    v = rule.decide({"xi": est(0.2, 0.05), "gap": Estimate.missing("ξ̂ ≥ 0")})
    assert v.outcome is Outcome.NOT_REPRODUCED and "no finite endpoint" in v.why
    v = rule.decide({"xi": est(-0.3, 0.05), "gap": Estimate.missing("x̂_F = 1.005 above the cap 1")})
    assert v.outcome is Outcome.INCONCLUSIVE and "above the cap" in v.why
    # an endpoint above the cap by more than the tolerance: also not the cap
    assert rule.decide({"xi": est(-0.3, 0.05), "gap": est(-0.4, 0.05)}).outcome \
        is Outcome.NOT_REPRODUCED
    assert rule.decide({"xi": est(-0.3, 0.05), "gap": est(0.09, 0.05)}).outcome \
        is Outcome.INCONCLUSIVE


def test_frechet_rule_says_not_identifiable_when_the_interval_is_wider_than_the_margin():
    rule = wt.RULES["frechet_none"]
    v = rule.decide({"lambda_f": est(-1.1, 2.5), "r2": 0.987})
    assert v.outcome is Outcome.INCONCLUSIVE and v.why.startswith("not identifiable")
    assert "0.9870" in v.why
    v = rule.decide({"lambda_f": est(0.08, 0.05), "r2": 0.3})
    assert v.outcome is Outcome.INCONCLUSIVE and "straddles" in v.why
    # a wide interval that still excludes every Fréchet weight ≥ the margin decides
    assert rule.decide({"lambda_f": est(-3.0, 2.5), "r2": 0.99}).outcome is Outcome.REPRODUCED


def test_stability_rule_uses_half_the_earlier_gain_as_its_margin():
    rule = wt.RULES["link_stable"]
    early, late = est(0.10, 0.02), est(0.10, 0.02)
    assert rule.decide({"early": early, "late": late, "change": est(0.0, 0.04)}).outcome \
        is Outcome.REPRODUCED  # inside ±0.05
    v = rule.decide({"early": early, "late": late, "change": est(0.0, 0.06)})
    assert v.outcome is Outcome.INCONCLUSIVE and "straddles" in v.why
    v = rule.decide({"early": est(0.10, 0.02), "late": est(0.01, 0.03), "change": est(-0.09, 0.03)})
    assert v.outcome is Outcome.NOT_REPRODUCED  # gain changed by more than half of itself
    v = rule.decide({"early": Estimate.missing("degenerate"), "late": late, "change": est(0, 0.01)})
    assert v.outcome is Outcome.INCONCLUSIVE


def test_repulsion_rule_fails_on_a_falling_step():
    rule = wt.RULES["low_tau_concentrates"]
    v = rule.decide({"share": est(0.7, 0.05), "rises": [est(0.1, 0.01), est(-0.05, 0.01)]})
    assert v.outcome is Outcome.NOT_REPRODUCED and "falls" in v.why
    v = rule.decide({"share": est(0.50, 0.01), "rises": [est(0.1, 0.01)]})
    assert v.outcome is Outcome.INCONCLUSIVE


# ------------------------------------------------------------------ synthetic tails summaries
def run_record(*, xi: float = -0.45, endpoint: float | None = 0.995, u: float = 0.90,
               delta: float = 0.03, delta_se: float = 0.01, lam: float = 0.19,
               lam_se: float | None = 0.03, boundary: bool = False, degenerate: bool = False,
               lam_out: float = 1.0, lrt: float | None = 0.025, lrt_floor: float | None = 0.025,
               lambda_f: float = -1.1, lambda_f_se: float = 1.0, r2: float = 0.987,
               hard_lam: float = -0.28, hard_delta: float = -0.03, pool_lam: float = 0.35,
               tv_gap: float = 0.18, share: float = 0.50, batches: dict[str, float] | None = None,
               pool_points: int = 5, lrt_exp: float | None = 900.0, deff: float | None = 2.0,
               ) -> dict[str, Any]:
    """One run's final-epoch record, shaped like the diagnose stage's (the keys the section reads).
    ``lrt_exp`` None: a record from before the GPD-vs-exponential test (none of its keys);
    ``deff`` None: no cluster bootstrap, so no adjusted LR."""
    from scipy.stats import chi2

    vs_exp = {} if lrt_exp is None else {
        "lrt_exp": lrt_exp, "lrt_exp_p": float(chi2.sf(lrt_exp, 1)), "delta_aic_exp": lrt_exp - 2,
        "lrt_exp_deff": deff, "lrt_exp_adjusted": None if deff is None else lrt_exp / deff,
        "lrt_exp_adjusted_p": None if deff is None else float(chi2.sf(lrt_exp / deff, 1))}
    taus = ["tau_1", "tau_0.5", "tau_0.2", "tau_0.1", "tau_0.07"]
    shares = [0.026, 0.05, 0.17, 0.37, share]
    link = {"lambda_hat": lam, "lambda_se": None if boundary else lam_se, "lambda_df": 5,
            "lambda_boundary": boundary, "delta_mean": delta, "delta_se": delta_se, "delta_df": 5,
            "delta_ci_low": delta - 2 * delta_se, "delta_ci_high": delta + 2 * delta_se,
            "delta_degenerate": degenerate, "t_pvalue": 0.02, "lrt_pvalue": lrt,
            "lrt_floor": lrt_floor, "delta_by_batch": batches or {}}
    return {
        "pot": {"xi": xi, "xi_se": 0.02, "xi_ci_low": xi - 0.04, "xi_ci_high": xi + 0.03,
                "u": u, "endpoint": endpoint, "endpoint_se": 0.002,
                "endpoint_ci_low": None if endpoint is None else endpoint - 0.005,
                "endpoint_ci_high": None if endpoint is None else endpoint + 0.001,
                "max_score": 0.994, **vs_exp},
        "link": {"inside": link, "outside": {**link, "lambda_hat": lam_out,
                                             "lambda_boundary": True, "lambda_se": None,
                                             "lrt_pvalue": None, "lrt_floor": None}},
        "frechet": {"frechet_lambda_score": lambda_f, "frechet_lambda_score_se": lambda_f_se,
                    "frechet_lambda_score_df": 5, "frechet_collinearity_r2": r2,
                    "delta_joint_vs_weibull": 1e-9, "lambda_frechet_joint": 0.0},
        "ablations": {"hardness_lambda_slope": hard_lam, "hardness_delta_slope": hard_delta,
                      "hardness_delta_slope_se": 0.003, "hardness_delta_slope_df": 5,
                      "pool_lambda_slope": pool_lam, "pool_lambda_points": pool_points},
        "allocation": {"tv_gap": tv_gap, "tv_gap_se": 0.02, "tv_gap_ci_low": tv_gap - 0.04,
                       "tv_gap_ci_high": tv_gap + 0.04},
        "repulsion": {"df": 11, "share": dict(zip(taus, shares, strict=True)),
                      "share_se": dict.fromkeys(taus, 0.003),
                      "rise": {t: b - a for t, a, b in zip(taus[1:], shares[:-1], shares[1:],
                                                             strict=True)},
                      "rise_se": dict.fromkeys(taus[1:], 0.001)},
    }


def group(loss: str, records: dict[int, dict[int, dict[str, Any]]], schedule: str = "fixed",
          **extra: Any) -> dict[str, Any]:
    """{epoch: {seed: record}} → a summary entry as summarise_tails writes it, estimates and all."""
    from infonce_lab.aggregate import _leaves, _with_estimates

    per_seed: dict[str, dict[str, dict[str, Any]]] = {}
    for epoch, by_seed in records.items():
        for seed, record in by_seed.items():
            for k, v in _leaves(record).items():
                per_seed.setdefault(str(epoch), {}).setdefault(k, {})[str(seed)] = v
    seeds = sorted({s for by in records.values() for s in by})
    return _with_estimates({"run": {"dataset": "d", "backbone": "b", "loss": loss,
                                    "schedule": schedule},
                            "seeds": seeds, "epochs": sorted(records), "per_seed": per_seed,
                            **extra})


KINDS = {"infonce": "info_nce", "weince": "weince", "directau": "direct_au"}


def rows_by_rule(tails: dict[str, Any], min_seeds: int = 1) -> dict[str, Any]:
    """The rows by rule id; every InfoNCE configuration counted whatever its seeds (the seed
    gate has its own test) so that one- and two-seed fixtures test the rules."""
    rows = wt.claim_rows(tails, KINDS, ["inside", "outside"], min_seeds=min_seeds)
    return dict(zip(wt.CLAIMS, rows, strict=True))


def test_a_configuration_with_fewer_than_min_seeds_is_context_not_counted():
    """Declared before the data: an InfoNCE configuration decides a tail claim only with
    MIN_SEEDS seeds or more (t over seeds, one bank draw each); with fewer it is context."""
    gains = [0.05, 0.06, 0.04, 0.055, 0.045]
    five = group("infonce", {60: {k: run_record(delta=d) for k, d in enumerate(gains, 1)}})
    two = group("infonce", {60: {1: run_record(delta=-0.3), 2: run_record(delta=-0.31)}},
                schedule="cosine")
    tails = {"d-b-infonce-fixed": five, "d-b-infonce-cosine": two}
    gain = rows_by_rule(tails, min_seeds=wt.MIN_SEEDS)["link_gain"]
    assert wt.MIN_SEEDS == 5
    assert gain.verdict.outcome is Outcome.REPRODUCED  # the two-seed failure cannot sink it
    names = [c.name for c in gain.cases]
    assert names[0] == "infonce · fixed"
    assert "infonce · cosine (context: 2 seeds, fewer than 5, not counted)" in names
    # its interval is the t over the five seeds alone (the runs' own se's are not added)
    e = wt.estimate(five, "delta.inside")
    assert e.t is not None and e.t.df == 4
    assert e.t.se == pytest.approx(np.std(gains, ddof=1) / np.sqrt(5))
    # only under-seeded configurations: every claim is not run, and says what it takes
    row = rows_by_rule({"d-b-infonce-cosine": two}, min_seeds=wt.MIN_SEEDS)["link_gain"]
    assert row.verdict.outcome is Outcome.NOT_RUN and "5 seeds or more" in row.verdict.why
    ctx = wt.context(tails, KINDS, min_seeds=wt.MIN_SEEDS)
    assert [c["counted"] for c in ctx["configurations"]] == [True, False]


def default_study() -> dict[str, Any]:
    """Five seeds of an InfoNCE configuration at epochs 30 and 60, like the default study's
    numbers (each seed's Δ̄ 0.004 lower at 60 on every batch), and a DirectAU configuration with
    a degenerate link test (context)."""
    b = {"0": 0.02, "3": 0.04, "5": 0.03, "6": 0.025, "9": 0.035, "11": 0.03}
    late = {str(k): v - 0.002 for k, v in b.items()}
    # (xi, Δ̄ at 30, λ̂, hardness slope of λ̂, Fréchet score weight λ_F) per seed
    seeds = {1: (-0.45, 0.035, 0.19, -0.28, -1.1), 2: (-0.48, 0.033, 0.18, -0.20, 0.6),
             3: (-0.46, 0.034, 0.17, -0.26, -1.4), 4: (-0.47, 0.036, 0.20, -0.22, 0.9),
             5: (-0.44, 0.032, 0.18, -0.25, -0.2)}
    info = group("infonce", {
        epoch: {k: run_record(xi=xi, delta=d - (0.004 if epoch == 60 else 0.0),
                              lam=lam - (0.02 if epoch == 60 else 0.0), hard_lam=h,
                              lambda_f=lf, batches=late if epoch == 60 else b)
                for k, (xi, d, lam, h, lf) in seeds.items()}
        for epoch in (30, 60)})
    dau = group("directau", {30: {1: run_record(lam=0.0, boundary=True, degenerate=True, delta=0.0)},
                             60: {1: run_record(lam=0.0, boundary=True, degenerate=True, delta=0.0,
                                                endpoint=1.004)}})
    return {"d-b-infonce-fixed": info, "d-b-directau-fixed": dau}


@pytest.fixture(scope="module")
def default_rows() -> dict[str, Any]:
    """The default-study-shaped rows, built once (Holm's statsmodels call collects garbage)."""
    return rows_by_rule(default_study())


def test_rows_on_the_default_study_shape(default_rows):
    rows = default_rows
    # The default study's gain is far below the paper's range: the magnitude claims fail.
    assert rows["link_delta_magnitude"].verdict.outcome is Outcome.NOT_REPRODUCED
    assert rows["link_lambda_magnitude"].verdict.outcome is Outcome.NOT_REPRODUCED
    assert rows["link_gain"].verdict.outcome is Outcome.REPRODUCED
    # declared before the data: no Fréchet coordinate separates on cosines; the stand-in's
    # numbers are shown (a Fréchet weight of ±2.5 fits these data: not identifiable either)
    fr = rows["frechet_none"]
    assert fr.verdict.outcome is Outcome.NOT_TESTABLE and fr.verdict.why == wt.FRECHET_UNTESTABLE
    assert "not identifiable" in fr.cases[0].verdict.why
    alone = rows["frechet_alone"]
    assert alone.verdict.outcome is Outcome.NOT_TESTABLE and alone.cases
    assert "Δ_WF−W = 0 by construction" in fr.note.replace("Δ̄", "Δ")
    assert "e-" not in fr.note  # no round-off printed as a number beside "by construction"
    assert rows["hardness_dilutes"].verdict.outcome is Outcome.INCONCLUSIVE  # λ̂ slope: df 1
    for rid, row in rows.items():
        assert row.rule == wt.RULES[rid].text
        assert row.section == ("au" if rid == "low_tau_concentrates" else "weince")


def test_context_configurations_are_shown_and_not_counted(default_rows):
    rows = default_rows
    gain = rows["link_gain"]
    names = [c.name for c in gain.cases]
    assert names[0] == "infonce · fixed"
    dau = [c for c in gain.cases if "directau" in c.name]
    assert dau and "context: direct_au, not counted" in dau[0].name
    # the DirectAU link test is degenerate (λ̂ = 0): undefined, not Δ̄ = 0
    assert "by construction" in dau[0].result and dau[0].verdict.outcome is Outcome.INCONCLUSIVE
    outside = [c for c in gain.cases if "1/τ outside" in c.name]
    assert len(outside) == 1
    assert gain.verdict.outcome is Outcome.REPRODUCED  # decided by the InfoNCE case alone


def test_counted_failure_fails_the_claim_and_context_cannot_rescue_or_sink_it():
    bad = group("infonce", {60: {1: run_record(delta=-0.05, delta_se=0.01)}})
    good_ctx = group("weince", {60: {1: run_record(delta=0.3, delta_se=0.01)}})
    rows = rows_by_rule({"d-b-infonce-fixed": bad, "d-b-weince-fixed": good_ctx})
    assert rows["link_gain"].verdict.outcome is Outcome.NOT_REPRODUCED
    good = group("infonce", {60: {1: run_record(delta=0.05, delta_se=0.01)}})
    bad_ctx = group("weince", {60: {1: run_record(delta=-0.3, delta_se=0.01)}})
    rows = rows_by_rule({"d-b-infonce-fixed": good, "d-b-weince-fixed": bad_ctx})
    assert rows["link_gain"].verdict.outcome is Outcome.REPRODUCED


def test_undefined_values_never_print_as_numbers(default_rows):
    rows = default_rows
    dau_pot = [c for c in rows["pot_endpoint_at_cap"].cases if "directau" in c.name][0]
    assert "above the cap 1" in dau_pot.result and "1.004" in dau_pot.result
    assert dau_pot.verdict.outcome is Outcome.INCONCLUSIVE
    lam_dau = [c for c in rows["link_lambda_magnitude"].cases if "directau" in c.name][0]
    assert lam_dau.result.startswith("undefined") and "boundary" in lam_dau.result
    lam_out = [c for c in rows["link_lambda_magnitude"].cases if "outside" in c.name][0]
    assert lam_out.result.startswith("undefined")


def test_lambda_interval_wider_than_its_range_is_undefined():
    g = group("infonce", {60: {1: run_record(lam=0.05, lam_se=0.2), 2: run_record(lam=0.9)}})
    e = te.lambda_estimate(g, 60, "inside")
    assert not e.defined and "wider than λ's range" in e.undefined


def test_pool_slope_through_too_few_pools_is_undefined():
    # one seed kept only 3 of the 5 pools (the others had a degenerate softmax fit)
    g = group("infonce", {60: {1: run_record(pool_points=3), 2: run_record()}})
    e = te.pool_lambda_estimate(g, 60)
    assert not e.defined and "3 pools" in e.undefined
    g = group("infonce", {60: {1: run_record(pool_lam=0.30), 2: run_record(pool_points=4)}})
    assert te.pool_lambda_estimate(g, 60).defined


def test_lrt_at_its_floor_is_printed_as_a_bound(default_rows):
    rows = default_rows
    note = rows["link_gain"].note
    assert "≤ 0.025 (bootstrap floor)" in note and "seed 1" in note and "seed 2" in note
    ctx = wt.context(default_study(), KINDS, min_seeds=1)
    assert ctx is not None
    assert {r["lrt_p"] for r in ctx["runs"] if r["counted"]} == {"≤ 0.025 (bootstrap floor)"}


def test_combine_is_the_t_over_seeds_each_on_its_own_bank():
    # each seed has its own bank draw, so the spread over seeds carries the bank's error: the
    # runs' own se's are not added (scipy's one-sample t interval is the reference)
    from scipy import stats

    values = {"1": te.SeedValue(0.10, 0.03, None), "2": te.SeedValue(0.12, 0.03, None),
              "3": te.SeedValue(0.15, 0.001, 5)}
    e = te.combine(values)
    xs = [0.10, 0.12, 0.15]
    assert e.t is not None and e.t.df == 2 and e.value == pytest.approx(np.mean(xs))
    lo, hi = stats.t.interval(0.95, 2, loc=np.mean(xs), scale=stats.sem(xs))
    assert (e.low, e.high) == (pytest.approx(lo), pytest.approx(hi))
    assert "t over 3 seeds" in e.note
    # two seeds that happen to agree: one df, wide — not a Welch df made large by the bank's se
    e = te.combine({"1": te.SeedValue(0.10, 0.03, None), "2": te.SeedValue(0.1001, 0.03, None)})
    assert e.t is not None and e.t.df == 1
    # one seed: its own bootstrap interval, not a made-up t
    e = te.combine({"3": te.SeedValue(0.1, 0.02, None, 0.05, 0.16, "bootstrap")})
    assert (e.low, e.high) == (0.05, 0.16) and e.t is None and "one seed (3)" in e.note
    assert not te.combine({"3": te.SeedValue(0.1)}).defined
    # identical values over seeds and no per-run error: no interval, not a certainty
    assert not te.combine({"1": te.SeedValue(-1.0), "2": te.SeedValue(-1.0)}).defined


def test_stability_pairs_epochs_by_batch_within_a_run_and_by_seed_across(default_rows):
    rows = default_rows
    case = rows["link_stable"].cases[0]
    assert "epoch 30" in case.result and "epoch 60" in case.result
    x = wt.stability_inputs(default_study()["d-b-infonce-fixed"], "inside")
    assert x is not None
    # per run the change is Δ̄(60) − Δ̄(30) with its batch-paired se (every batch moved by
    # exactly −0.002: se 0); over the two seeds: −0.004 on average
    assert x["change"].value == pytest.approx(-0.004)
    one_epoch = group("infonce", {60: {1: run_record()}})
    row = rows_by_rule({"d-b-infonce-fixed": one_epoch})["link_stable"]
    assert row.verdict.outcome is Outcome.NOT_RUN


def test_holm_runs_over_the_counted_configurations():
    tails = {f"d-b-infonce-{s}": group("infonce", {60: {1: run_record(delta=d, delta_se=0.01)}},
                                       schedule=s)
             for s, d in (("fixed", 0.05), ("cosine", 0.03))}
    gain = rows_by_rule(tails)["link_gain"]
    assert all("Holm" in c.p for c in gain.cases if "context" not in c.name)
    assert gain.result.startswith("2 reproduced") or "inconclusive" in gain.result


def test_without_an_infonce_configuration_the_claims_are_not_run():
    rows = rows_by_rule({"d-b-weince-fixed": group("weince", {60: {1: run_record()}})})
    # the declared-untestable rows stay so; every row still shows the context it measured
    assert all(r.verdict.outcome is (Outcome.NOT_TESTABLE if wt.CLAIMS[k].untestable
                                     else Outcome.NOT_RUN) for k, r in rows.items())
    assert all(any(c.name.startswith("weince · fixed") and "context" in c.name for c in r.cases)
               for k, r in rows.items() if k != "link_stable")  # one epoch: no change to show
    assert all(r.verdict.outcome is Outcome.NOT_RUN for r in wt.claim_rows(None, KINDS))


def test_repulsion_row_reads_the_lowest_tau():
    g = group("infonce", {60: {1: run_record(share=0.8)}})
    x = wt.repulsion_inputs(g)
    assert x["tau"] == 0.07 and x["share"].value == pytest.approx(0.8) and len(x["rises"]) == 4
    row = rows_by_rule({"d-b-infonce-fixed": g})["low_tau_concentrates"]
    assert row.verdict.outcome is Outcome.REPRODUCED and row.section == "au"
    g = group("infonce", {60: {1: run_record(share=0.3)}})
    assert rows_by_rule({"d-b-infonce-fixed": g})["low_tau_concentrates"].verdict.outcome \
        is Outcome.NOT_REPRODUCED


def test_run_table_shows_every_run_with_its_own_numbers():
    ctx = wt.context(default_study(), KINDS, min_seeds=1)
    assert ctx is not None and ctx["primary"] == "inside"
    runs = ctx["runs"]
    assert [(r["configuration"], r["seed"]) for r in runs] == [
        *(("infonce · fixed", str(k)) for k in range(1, 6)), ("directau · fixed", "1")]
    dau = runs[5]
    assert dau["endpoint"].startswith("undefined (x̂_F > 1")
    assert dau["delta"].startswith("undefined") and dau["lambda_inside"].startswith("undefined")
    # degenerate fits: the gains' and the likelihood ratio's p-values are round-off, not numbers
    assert dau["t_p"] == dau["lrt_p"] == "undefined (H1 = H0)"
    assert runs[0]["t_p"] != "undefined (H1 = H0)"
    assert runs[0]["lambda_outside"].startswith("undefined")
    configs = ctx["configurations"]
    assert [c["configuration"] for c in configs] == ["infonce · fixed", "directau · fixed"]
    assert configs[0]["seeds"] == "1, 2, 3, 4, 5" and "seeds" in configs[0]["delta"]
    assert configs[1]["delta"].startswith("undefined") and not configs[1]["counted"]
    assert wt.context(None, KINDS) is None


def test_repulsion_figure_from_the_summary_and_absent_without_its_data():
    from infonce_lab.report.sections.weince_tails import repulsion_curves, tail_figures

    def m(mean: float) -> dict[str, Any]:
        return {"mean": mean, "ci95": 0.01, "n": 2, "std": 0.005}

    keys = {f"repulsion.share.tau_{t:g}": m(v) for t, v in ((1.0, 0.03), (0.2, 0.17), (0.07, 0.5))}
    tails = {"d-b-infonce-fixed": {"epochs": [60], "by_epoch": {"60": {
        **keys, "repulsion.uniform_share": m(0.0118), "pot.xi": m(-0.45)}}}}
    png = repulsion_curves(tails)
    assert png is not None and png.startswith(b"\x89PNG")
    assert "repulsion" in tail_figures(tails, "inside", None, None)
    bare = {"d-b-infonce-fixed": {"epochs": [60], "by_epoch": {"60": {"pot.xi": m(-0.45)}}}}
    assert repulsion_curves(bare) is None


def test_a_shipped_text_encoder_is_not_called_a_seed():
    """A packaged encoder's group (summarise_text_tails: one "seed" 0, sentence clusters) reads
    as the shipped weights with a sentence-cluster bootstrap; a trained one-seed run keeps its
    seed and the image clusters."""
    shipped = group("as shipped", {0: {0: run_record(xi=-0.1)}}, shipped=True, cluster="sentence")
    trained = group("infonce", {60: {3: run_record(xi=-0.1)}})
    est = wt.estimate(shipped, "xi")
    assert est.note == "the weights as shipped: sentence-cluster bootstrap"
    assert "seed" not in wt.estimate(shipped, "endpoint_gap").note
    assert wt.estimate(trained, "xi").note == "one seed (3): image-cluster bootstrap"
    assert est.low == pytest.approx(-0.14) and est.high == pytest.approx(-0.07)


# ---------------------------------------------------- the GPD against its ξ = 0 special case
EXP = "pot_beats_exponential"


def test_exp_row_is_not_run_on_results_from_before_the_statistic():
    old = group("infonce", {60: {1: run_record(lrt_exp=None), 2: run_record(lrt_exp=None)}})
    rows = rows_by_rule({"d-b-infonce-fixed": old})
    assert rows[EXP].verdict.outcome is Outcome.NOT_RUN
    assert str(rows[EXP].verdict).startswith("not run: re-run diagnose")
    assert rows["pot_xi_magnitude"].verdict.outcome is not Outcome.NOT_RUN  # same file, decided
    # one configuration re-diagnosed, the other not: that one is not run and the row cannot pass
    new = group("infonce", {60: {1: run_record(), 2: run_record(xi=-0.48)}}, schedule="cosine")
    row = rows_by_rule({"d-b-infonce-fixed": old, "d-b-infonce-cosine": new})[EXP]
    assert {c.name: c.verdict.outcome for c in row.cases} == {
        "infonce · fixed": Outcome.NOT_RUN, "infonce · cosine": Outcome.REPRODUCED}
    assert row.verdict.outcome is Outcome.INCONCLUSIVE
    # one seed re-diagnosed, the other not: the configuration is not decided on the one seed
    half = group("infonce", {60: {1: run_record(), 2: run_record(lrt_exp=None)}})
    row = rows_by_rule({"d-b-infonce-fixed": half})[EXP]
    assert row.verdict.outcome is Outcome.NOT_RUN and "seed 2 lacks it" in row.verdict.why


def test_exp_rule_fails_on_a_heavy_tail_and_on_a_negligible_shape_and_abstains_between():
    rule = wt.RULES[EXP]
    v = rule.decide({"runs": [exp_run(est(0.2, 0.04), 1e-10)]})
    assert v.outcome is Outcome.NOT_REPRODUCED and "Fréchet" in v.why
    # ξ = 0 rejected, but the whole interval within 0.1 of it: not a poor exponential fit
    v = rule.decide({"runs": [exp_run(est(-0.05, 0.02), 1e-4)]})
    assert v.outcome is Outcome.NOT_REPRODUCED and "rejected, but" in v.why
    # one seed with an exponential tail fails its configuration
    v = rule.decide({"runs": [exp_run(est(-0.45, 0.04), 1e-30), exp_run(est(0.0, 0.03), 0.7, "2")]})
    assert v.outcome is Outcome.NOT_REPRODUCED and v.why.startswith("seed 2: ξ = 0 not rejected")
    v = rule.decide({"runs": [exp_run(est(-0.2, 0.3), 0.2)]})
    assert v.outcome is Outcome.INCONCLUSIVE and "not rejected" in v.why
    # rejected, ξ̂ short of the minimum effect, its interval reaching past it
    v = rule.decide({"runs": [exp_run(est(-0.08, 0.05), 1e-6)]})
    assert v.outcome is Outcome.INCONCLUSIVE and "minimum effect" in v.why
    v = rule.decide({"runs": [exp_run(est(-0.45, 0.04), None)]})  # no cluster bootstrap
    assert v.outcome is Outcome.INCONCLUSIVE and "design effect" in v.why
    assert rule.decide({"runs": [], "missing": wt.NO_EXP_LRT}).outcome is Outcome.NOT_RUN


def test_exp_row_holm_adjusts_over_every_counted_run():
    # LR 12 ÷ design effect 2 = 6 in every run: p = 0.014 alone, 0.057 after Holm over four runs
    tails = {f"d-b-infonce-{s}": group("infonce", {60: {1: run_record(lrt_exp=12.0),
                                                        2: run_record(lrt_exp=12.0, xi=-0.47)}},
                                       schedule=s) for s in ("fixed", "cosine")}
    row = rows_by_rule(tails)[EXP]
    assert [c.verdict.outcome for c in row.cases] == [Outcome.INCONCLUSIVE] * 2
    assert all("Holm-adjusted p = 0.057" in c.verdict.why for c in row.cases)
    assert "÷ design effect 2.00 = 6.0, p = 0.014, Holm 0.057" in row.cases[0].result
    one = {"d-b-infonce-fixed": group("infonce", {60: {1: run_record(lrt_exp=12.0)}})}
    assert rows_by_rule(one)[EXP].verdict.outcome is Outcome.REPRODUCED
    # a context configuration is adjusted on its own and decides nothing
    ctx = group("weince", {60: {1: run_record(lrt_exp=0.1, xi=0.0)}})
    row = rows_by_rule({**one, "d-b-weince-fixed": ctx})[EXP]
    assert row.verdict.outcome is Outcome.REPRODUCED
    assert [c.verdict.outcome for c in row.cases] == [Outcome.REPRODUCED, Outcome.NOT_REPRODUCED]


def _synthetic_pot(tail: str, seed: int) -> dict[str, Any]:
    """The diagnose stage's POT metrics (its own code path) on a synthetic bank: 45,000 cosines
    below 0.5 and 5,000 above, 0.5 + y with y drawn from an exponential (σ = 0.05) or a GPD
    (ξ = −0.3, σ = 0.05), every cosine on a random pair of 1,347 images (independent pairs)."""
    import numpy as np
    from scipy import stats

    from infonce_lab.params import TailsConfig
    from infonce_lab.params.tails import POTConfig
    from infonce_lab.pipeline.diagnose import pot_diagnostics
    from infonce_lab.tails.banks import PotScores

    rng = np.random.default_rng(seed)
    y = (rng.exponential(0.05, 5000) if tail == "exponential" else
         stats.genpareto.rvs(-0.3, scale=0.05, size=5000, random_state=rng))
    scores = np.concatenate([rng.uniform(-0.5, 0.5, 45_000), 0.5 + y])
    a = rng.integers(0, 1347, scores.size)
    b = (a + rng.integers(1, 1347, scores.size)) % 1347
    cfg = TailsConfig(seed=seed, pot=POTConfig(q=0.9, stability_qs=[0.9], bootstrap=200))
    return pot_diagnostics(PotScores(scores, a, b), cfg)[0]


@pytest.mark.parametrize(("tail", "outcome"), [("exponential", Outcome.NOT_REPRODUCED),
                                               ("gpd", Outcome.REPRODUCED)])
def test_exp_row_on_known_exceedances(tail, outcome):
    """Known answer through the diagnose stage's code and the aggregate's per-seed values: two
    seeds of exponential exceedances fail the row (ξ̂'s interval within 0.1 of 0), two of a
    ξ = −0.3 GPD pass it."""
    records = {}
    for seed in (1, 2):
        record = run_record()
        record["pot"] = _synthetic_pot(tail, 100 + seed)
        records[seed] = record
    pots = [r["pot"] for r in records.values()]
    assert all(1.0 <= p["lrt_exp_deff"] < 2.5 for p in pots)  # independent pairs: ≈ 1
    if tail == "exponential":
        assert all(abs(p["xi"]) < 0.05 and p["lrt_exp"] < 15 for p in pots)
    else:
        assert all(abs(p["xi"] + 0.3) < 0.05 and p["lrt_exp_adjusted"] > 100 for p in pots)
    row = rows_by_rule({"d-b-infonce-fixed": group("infonce", {60: records})})[EXP]
    assert row.verdict.outcome is outcome, (str(row.verdict), row.result)
