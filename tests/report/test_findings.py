"""The opening summary is computed from the rows by rules stated before the data: counts kept apart
by what a verdict rests on, context rows and self-checks never counted, every primary and pooled
estimate stated with its sign, every verdict near its threshold named, and a contradiction worded
by what it contradicts — a failing row must show up in it."""

from __future__ import annotations

from infonce_lab.evaluation.stats import TInference
from infonce_lab.report.findings import CONTRADICTS, LISTED, NOT_REACHED, findings, short
from infonce_lab.report.sections import PAPERS
from infonce_lab.report.verdicts import (
    GROUPS,
    Above,
    Case,
    ClaimRow,
    Estimate,
    Evidence,
    Outcome,
    Verdict,
    decide_family,
    deciding_p,
    near_threshold,
)


def row(section: str, claim: str, outcome: Outcome, evidence: Evidence = Evidence.SETTING,
        **kw) -> ClaimRow:
    return ClaimRow(section, "t", claim, "q", "rule", "res", Verdict(outcome), evidence=evidence,
                    **kw)


SETTING, CHECKS, PAPER_SCALE = GROUPS


def test_counts_are_kept_apart_by_evidence_and_context_is_not_counted():
    rows = [row("weince", "weince beats infonce (pre-registered primary comparison; x)",
                Outcome.INCONCLUSIVE, primary=True),
            row("weince", "The fitted shape is ξ̂ = -0.39 (§2.3.1) — decided here",
                Outcome.NOT_REPRODUCED),
            row("weince", "Table 1 link", Outcome.REPRODUCED, Evidence.THEORY),
            row("weince", "at the paper's settings", Outcome.NOT_RUN, Evidence.PAPER_SCALE),
            row("weince", "tuning inflation", Outcome.REPRODUCED, Evidence.CONTEXT),
            row("weince", "our own check", Outcome.NOT_REPRODUCED, self_check=True),
            row("au", "uniformity falls", Outcome.NOT_RUN, Evidence.PAPER_SCALE)]
    w, au = findings(rows, PAPERS)
    assert (w.section, au.section) == ("weince", "au")
    assert w.groups[SETTING] == {"n": 2, "reproduced": 0, "not_reproduced": 1,
                                 "inconclusive": 1, "not_run": 0}
    assert w.groups[CHECKS]["reproduced"] == 1 and w.groups[PAPER_SCALE]["not_run"] == 1
    assert w.n == 4  # neither the context row nor the self-check
    assert [c[0] for c in w.context] == ["tuning inflation"]
    assert w.contradicted == {CONTRADICTS[Evidence.SETTING]: ["The fitted shape is ξ̂ = -0.39 (§2.3.1)"]}
    assert w.reproduced == ["Table 1 link"]
    assert w.link == "https://arxiv.org/abs/2606.00262"
    assert set(au.groups) == {PAPER_SCALE} and not au.contradicted


def test_a_contradiction_is_worded_by_what_it_contradicts():
    rows = [row("geometry", "Thm: the gap closes", Outcome.NOT_REPRODUCED, Evidence.THEORY),
            row("geometry", "Fig. 3 re-run", Outcome.NOT_REPRODUCED, Evidence.EXPERIMENT)]
    (g,) = findings(rows, PAPERS)
    assert g.contradicted == {CONTRADICTS[Evidence.THEORY]: ["Thm: the gap closes"],
                              CONTRADICTS[Evidence.EXPERIMENT]: ["Fig. 3 re-run"]}
    assert "theory" in CONTRADICTS[Evidence.THEORY]
    assert "experiment" in CONTRADICTS[Evidence.EXPERIMENT]


def test_a_limit_that_fails_at_the_largest_size_is_not_reached_not_contradicted():
    rows = [row("geometry", "Thm 3.1: the gap → 0", Outcome.NOT_REPRODUCED, Evidence.THEORY,
                limit=True),
            row("geometry", "Thm: the gap closes", Outcome.NOT_REPRODUCED, Evidence.THEORY)]
    (g,) = findings(rows, PAPERS)
    assert g.contradicted == {NOT_REACHED: ["Thm 3.1: the gap → 0"],
                              CONTRADICTS[Evidence.THEORY]: ["Thm: the gap closes"]}


def test_the_declared_limit_claims_are_the_ones_about_a_limit():
    """Every claim declared a limit speaks of one (→, lim, liminf/limsup); its rows keep the flag
    whether they ran or not."""
    from infonce_lab.report import sections

    declared = [c for m in sections.modules() for v in vars(m).values() if isinstance(v, dict)
                for c in v.values() if getattr(c, "limit", False)]
    assert len(declared) >= 7
    for c in declared:
        assert "→" in c.text or "lim" in c.text, c.text
        assert c.not_run("x").limit and c.row([]).limit


def _cases(means: list[float], se: float = 0.5, n: int = 8) -> list[Case]:
    rule = Above(0.0, min_effect=1.0, unit="points")
    return decide_family(rule, [Estimate.from_t(TInference(m, se, n - 1, n), unit="points")
                                for m in means], [f"case {i}" for i in range(len(means))])


def test_primary_and_pooled_estimates_are_stated_with_sign_and_near_threshold_named():
    # −1.5 ± se 0.5 at 7 df: far below the +1-point gain, p against ≈ 0.0006 (Holm ≈ 0.001) —
    # decided, not near; −0.05 ± 0.5 leaves p against ≈ 0.03: inconclusive, near its threshold.
    primary = _cases([-1.5, -0.05])
    pooled = [Case(**{**c.__dict__, "pooled": True}) for c in _cases([2.5])]
    rows = [row("weince", "weince beats infonce (pre-registered primary comparison)",
                Outcome.NOT_REPRODUCED, primary=True, cases=primary),
            row("weince", "WEINCE beats InfoNCE on kNN", Outcome.REPRODUCED, cases=pooled)]
    (w,) = findings(rows, PAPERS)
    # worded against each threshold of the rule: 0 and the +1-point smallest gain
    assert [s.direction for s in w.primary] == ["below 0, below +1", "spans 0, spans +1"]
    assert w.primary[0].text.startswith("-1.500") and w.pooled[0].direction == "above 0, above +1"
    near = [near_threshold(c) for c in primary]
    assert near[0] is None and near[1] is not None and 0.0125 <= near[1] < 0.05
    assert w.primary[1].near == near[1]
    assert w.near == []  # primary and pooled estimates carry their p where they are stated


def test_a_reproduced_case_is_decided_by_its_p_for_the_claim():
    # Above(0, min_effect=1): mean 0.45, se 0.17, 7 df. The interval lies above 0 (p for the
    # claim ≈ 0.017, near) and below +1 (p against ≈ 0.007): the regions overlap, and the p that
    # decided "reproduced" is the one for the claim, not the smaller.
    (case,) = _cases([0.45], se=0.17)
    assert case.verdict.outcome is Outcome.REPRODUCED
    assert case.p_against < case.p_for
    assert deciding_p(case) == case.p_for and near_threshold(case) == case.p_for


def test_long_lists_are_cut_with_a_count():
    rows = [row("geometry", f"claim {i}", Outcome.NOT_REPRODUCED) for i in range(LISTED + 3)]
    (g,) = findings(rows, PAPERS)
    wording = CONTRADICTS[Evidence.SETTING]
    assert len(g.contradicted[wording]) == LISTED and g.more_contradicted == {wording: 3}
    theory = [row("geometry", "thm", Outcome.NOT_REPRODUCED, Evidence.THEORY)]
    (g,) = findings(rows + theory, PAPERS)  # the count stays with its own wording
    assert g.more_contradicted == {wording: 3} and g.contradicted[CONTRADICTS[Evidence.THEORY]]


def test_short_cuts_at_a_word():
    text = "word " * 40
    assert short(text).endswith(" …") and len(short(text)) <= 92
    assert short("a — b") == "a"


def test_a_qualifying_self_check_is_stated_not_counted():
    import pytest

    from infonce_lab.report.verdicts import claims

    rows = [row("annealing", "Thm 3.2: escapes", Outcome.REPRODUCED, Evidence.THEORY),
            row("annealing", "Our analysis: the threshold holds for P2 only", Outcome.REPRODUCED,
                Evidence.THEORY, self_check=True, qualifies=True),
            row("annealing", "Our watershed", Outcome.REPRODUCED, Evidence.THEORY,
                self_check=True)]
    (f,) = [f for f in findings(rows, PAPERS) if f.section == "annealing"]
    assert f.n == 1
    assert f.qualifiers == [("Our analysis: the threshold holds for P2 only", "res",
                             "reproduced")]
    rules = {"ours": Above(0.0), "theirs": Above(0.0)}
    specs = {"ours": ("x", "q"), "theirs": ("y", "q")}
    assert claims("s", "t", rules, specs, self_checks=("ours",),
                  qualifying=("ours",))["ours"].not_run("why").qualifies
    with pytest.raises(ValueError, match="only a self-check"):
        claims("s", "t", rules, specs, qualifying=("theirs",))
