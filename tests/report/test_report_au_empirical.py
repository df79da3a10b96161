"""Wang & Isola's empirical claims: the plane fit on trained encoders, DirectAU non-inferiority."""

from __future__ import annotations

from paired_fixtures import pooled

from infonce_lab.evaluation.stats import t_mean
from infonce_lab.report.sections.au_empirical import claim_rows, direct_au_rows, plane_rows
from infonce_lab.report.verdicts import Estimate, Outcome

FIXTURES = {
    "plane_slope": (Estimate(-0.2, -0.3, -0.1), Estimate(0.1, 0.02, 0.18)),
    "direct_au": (Estimate(-0.3, -0.8, 0.2), Estimate(-2.0, -3.0, -1.2)),
}


def _slope(coef: float, half: float) -> dict:
    return {"coef": coef, "se": half / 2, "ci_low": coef - half, "ci_high": coef + half,
            "p": 0.01, "spearman": -0.4, "spearman_p": 0.1}


def _entry(a, u, with_ref=True):
    block = {"r2": 0.5, "dof": 8, "clusters": 9, "n": 18,
             "alignment": _slope(*a), "uniformity": _slope(*u)}
    entry = {"n_encoders": 18, "n_configurations": 9, "n_random_init": 2,
             "linear.test_acc": block}
    if with_ref:
        entry["linear.test_acc.with_random_init"] = {**block, "r2": 0.9}
    return entry


def _au(a, u, with_ref=True, h=((0.3, 0.05), (0.3, 0.05))):
    """z's fit decides; h's (by default the opposite sign) is only shown."""
    return {"digits": {"z": _entry(a, u, with_ref), "h": _entry(*h, with_ref=False)}}


def test_plane_needs_both_slopes_negative_on_trained_encoders():
    assert plane_rows(_au((-0.2, 0.05), (-0.1, 0.05)))[0].verdict.outcome is Outcome.REPRODUCED
    row = plane_rows(_au((-0.05, 0.09), (0.09, 0.07)))[0]  # the committed study's linear fit
    assert row.verdict.outcome is Outcome.NOT_REPRODUCED
    assert "random inits (reference" in row.cases[1].result
    assert plane_rows(_au((-0.2, 0.3), (-0.1, 0.05)))[0].verdict.outcome is Outcome.INCONCLUSIVE
    assert plane_rows(None)[0].verdict.outcome is Outcome.NOT_RUN


def test_the_plane_is_decided_on_z_and_shows_h():
    row = plane_rows(_au((-0.2, 0.05), (-0.1, 0.05)))[0]
    assert row.verdict.outcome is Outcome.REPRODUCED and "on h: +0.300" in row.cases[0].result
    # the same slopes on h alone (no z fit): not run, however good h looks
    only_h = {"digits": {"h": _entry((-0.2, 0.05), (-0.1, 0.05))}}
    assert plane_rows(only_h)[0].verdict.outcome is Outcome.NOT_RUN


def _pair(sched: str, diffs: dict[int, float]):
    t = t_mean(list(diffs.values()))
    return (f"digits-r/infonce_vs_directau@{sched}/linear.test_acc",
            {"a": "a", "b": "b", "metric": "linear.test_acc", "diff": {"mean": t.mean},
             "t": t.to_json(), "per_seed": {str(k): v for k, v in diffs.items()}})


KINDS = {"infonce": "info_nce", "directau": "direct_au"}


def test_direct_au_orientation_and_margin():
    # the file holds InfoNCE − DirectAU; the claim reads DirectAU − InfoNCE
    close = dict(_pair(s, {1: 0.002, 2: 0.001, 3: 0.003, 4: 0.002}) for s in ("f", "c"))
    assert direct_au_rows(close, pooled(close), KINDS)[0].verdict.outcome is Outcome.REPRODUCED
    far = dict(_pair(s, {1: 0.03, 2: 0.032, 3: 0.028, 4: 0.031}) for s in ("f", "c"))
    row = direct_au_rows(far, pooled(far), KINDS)[0]
    assert row.verdict.outcome is Outcome.NOT_REPRODUCED and row.result.startswith("pooled: -3.")
    assert claim_rows(None, {}, {}, KINDS)[-1].verdict.outcome is Outcome.NOT_RUN


def test_an_undefined_spearman_is_said_not_a_crash():
    """A coordinate constant over the encoders (a degenerate, e.g. synthetic, study) leaves
    Spearman's ρ undefined (None): the row says so and is still decided by its slopes."""
    au = _au((-0.2, 0.05), (-0.1, 0.05))
    au["digits"]["z"]["linear.test_acc"]["alignment"]["spearman"] = None
    row = plane_rows(au)[0]
    assert row.verdict.outcome is Outcome.REPRODUCED
    assert "Spearman ρ alone undefined (a constant)" in row.cases[0].result


def test_an_undefined_r2_is_said_not_a_crash():
    """An accuracy constant over the encoders (every synthetic encoder at chance) leaves R²
    undefined (None) in every fit: the cases say so."""
    au = _au((-0.2, 0.05), (-0.1, 0.05))
    for embedding in ("z", "h"):
        au["digits"][embedding]["linear.test_acc"]["r2"] = None
    row = plane_rows(au)[0]
    assert "R² undefined (a constant accuracy)" in row.cases[0].result
    assert row.cases[0].result.count("undefined (a constant accuracy)") == 2  # z and h
