"""The opening summary is computed from the rows: counts, the primary contrasts first, and the
claims our data contradict named — a failing row must show up in it."""

from __future__ import annotations

from infonce_lab.report.findings import LISTED, findings, short
from infonce_lab.report.verdicts import ClaimRow, Outcome, Verdict


def row(section: str, claim: str, outcome: Outcome, **kw) -> ClaimRow:
    return ClaimRow(section, "t", claim, "q", "rule", "res", Verdict(outcome), **kw)


def test_counts_primary_and_contradicted_claims():
    rows = [row("weince", "weince beats infonce (pre-registered primary comparison; x)",
                Outcome.INCONCLUSIVE, primary=True),
            row("weince", "The fitted shape is ξ̂ = -0.39 (§2.3.1) — decided here", Outcome.NOT_REPRODUCED),
            row("weince", "POT: ξ̂ < 0", Outcome.REPRODUCED),
            row("weince", "our own check", Outcome.NOT_REPRODUCED, self_check=True),
            row("au", "uniformity falls", Outcome.NOT_RUN)]
    w, au = findings(rows)
    assert (w.section, au.section) == ("weince", "au")
    assert w.counts == {"reproduced": 1, "not_reproduced": 1, "inconclusive": 1, "not_run": 0}
    assert w.primary == [("weince beats infonce", Verdict(Outcome.INCONCLUSIVE))]
    assert w.contradicted == ["The fitted shape is ξ̂ = -0.39 (§2.3.1)"]
    assert w.reproduced == ["POT: ξ̂ < 0"] and w.n == 3
    assert w.link == "https://arxiv.org/abs/2606.00262"
    assert au.counts["not_run"] == 1 and not au.contradicted


def test_long_lists_are_cut_with_a_count():
    rows = [row("geometry", f"claim {i}", Outcome.NOT_REPRODUCED) for i in range(LISTED + 3)]
    (g,) = findings(rows)
    assert len(g.contradicted) == LISTED and g.more_contradicted == 3


def test_short_cuts_at_a_word():
    text = "word " * 40
    assert short(text).endswith(" …") and len(short(text)) <= 92
    assert short("a — b") == "a"
