from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from infonce_lab.aggregate import (
    IncompleteSeeds,
    paired_comparison,
    paired_comparisons,
    pooled_over_schedules,
    select_on_validation,
    summarise,
)


def _frame(rows):  # noqa: ANN001, ANN202
    df = pd.DataFrame(rows)
    df["group"] = [f"d-b-{r['encoder.loss']}-{r['encoder.schedule']}" for r in rows]
    return df


def _row(loss, sched, seed, val, test):  # noqa: ANN001, ANN202
    return {"encoder.kind": "trained", "encoder.dataset": "d", "encoder.backbone": "b",
            "encoder.loss": loss, "encoder.schedule": sched, "encoder.seed": seed,
            "linear.val_acc": val, "linear.test_acc": test, "knn.val_acc": val, "knn.test_acc": test,
            "knn.test_recall_at_1": test, "knn.val_recall_at_1": val}


def test_paired_comparison_matches_scipy():
    a = [0.91, 0.93, 0.92, 0.95]
    b = [0.90, 0.90, 0.93, 0.91]
    df = _frame([_row("x", "s", i, 0.0, v) for i, v in enumerate(a)]
                + [_row("y", "s", i, 0.0, v) for i, v in enumerate(b)])
    res = paired_comparison(df, "d-b-x-s", "d-b-y-s", "linear.test_acc")
    diff = np.subtract(a, b)
    assert res["diff"]["mean"] == pytest.approx(diff.mean())
    assert res["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    lo, hi = stats.t.interval(0.95, df=3, loc=diff.mean(), scale=stats.sem(diff))
    assert res["diff"]["mean"] - res["diff"]["ci95"] == pytest.approx(lo)
    from statsmodels.stats.power import TTestPower  # the MDE: d at 80% power × the paired SD
    d = TTestPower().solve_power(nobs=4, alpha=0.05, power=0.8)
    assert res["mde_80"] == pytest.approx(d * np.std(diff, ddof=1))


def test_pooled_over_schedules_is_a_t_over_seeds_of_each_seeds_mean_difference():
    rng = np.random.default_rng(0)
    acc = {(lo, sc, s): float(rng.uniform(0.8, 0.95)) for lo in ("x", "y") for sc in ("s1", "s2")
           for s in range(4)}
    df = _frame([_row(lo, sc, s, 0.0, v) for (lo, sc, s), v in acc.items()])
    df["few.probe_test_acc"] = df["few.knn_test_acc"] = df["linear.test_acc"]
    pooled = pooled_over_schedules(paired_comparisons(df), df)
    assert set(pooled) >= {"d-b/x_vs_y@pooled/linear.test_acc"}
    p = pooled["d-b/x_vs_y@pooled/linear.test_acc"]
    # brute force: per seed the mean of x − y over the two schedules, then scipy's one-sample t
    per_seed = [np.mean([acc[("x", sc, s)] - acc[("y", sc, s)] for sc in ("s1", "s2")])
                for s in range(4)]
    assert [p["per_seed"][str(s)] for s in range(4)] == pytest.approx(per_seed)
    assert p["t"]["mean"] == pytest.approx(np.mean(per_seed))
    assert p["t"]["se"] == pytest.approx(stats.sem(per_seed)) and p["t"]["df"] == 3
    assert (p["a"], p["b"], p["schedules"]) == ("x", "y", ["s1", "s2"])


def test_refuses_incomplete_seed_sets():
    df = _frame([_row("x", "s", 1, 0, 0.9), _row("x", "s", 2, 0, 0.9), _row("y", "s", 1, 0, 0.8)])
    with pytest.raises(IncompleteSeeds, match=r"seeds \[1, 2\] vs \[1\]"):
        paired_comparison(df, "d-b-x-s", "d-b-y-s", "linear.test_acc")


def test_selection_uses_validation_never_test():
    # y has the better test score but the worse validation score: x must be selected.
    rows = [_row("x", "s", i, 0.95, 0.90) for i in (1, 2)] + [_row("y", "s", i, 0.90, 0.99) for i in (1, 2)]
    df = _frame(rows)
    sel = select_on_validation(df, summarise(df))
    chosen = sel["d-b/all/linear.test_acc"]
    assert chosen["selected"] == "d-b-x-s"
    assert chosen["test"]["mean"] == pytest.approx(0.90)


def test_selection_skips_configurations_missing_seeds():
    rows = ([_row("x", "s", i, 0.90, 0.90) for i in (1, 2)]
            + [_row("y", "s", 1, 0.99, 0.99)])  # y lacks seed 2
    df = _frame(rows)
    sel = select_on_validation(df, summarise(df))
    assert sel["d-b/all/linear.test_acc"]["selected"] == "d-b-x-s"


def test_alignment_uniformity_fit_recovers_a_planted_plane_and_skips_other_kinds():
    from infonce_lab.aggregate import alignment_uniformity

    rng = np.random.default_rng(1)
    rows = []
    for i in range(30):
        a, u = rng.uniform(0.1, 0.6), rng.uniform(-3.0, -0.5)
        acc = 0.9 - 0.3 * a - 0.1 * u + 0.002 * rng.normal()
        rows.append({"encoder.kind": "trained" if i % 5 else "random_init", "encoder.dataset": "d",
                     "geometry_z.alignment": a, "geometry_z.uniformity": u,
                     "geometry.alignment": u, "geometry.uniformity": a,  # h: the plane swapped
                     "linear.test_acc": acc, "knn.test_acc": acc})
    # a raw-pixel baseline far off the plane must not enter the fit
    rows.append({"encoder.kind": "raw_pixels", "encoder.dataset": "d", "geometry.alignment": 5.0,
                 "geometry.uniformity": 5.0, "linear.test_acc": 1.0, "knn.test_acc": 1.0})
    # (raw pixels have no projector: no z coordinates)
    df = pd.DataFrame(rows)
    df["group"] = [f"c{i % 10}" if k == "trained" else "ri" for i, k in enumerate(df["encoder.kind"])]
    both = alignment_uniformity(df)["d"]
    out = both["z"]
    # h is fitted on its own coordinates: the swapped plane's slopes
    assert both["h"]["linear.test_acc"]["alignment"]["coef"] == pytest.approx(-0.1, abs=0.01)
    # the claim's fit: trained encoders only, clustered by configuration
    assert out["n_encoders"] == 24 and out["n_random_init"] == 6
    assert out["linear.test_acc"]["clusters"] == 8 and out["linear.test_acc"]["n"] == 24
    fit = out["linear.test_acc"]
    assert fit["alignment"]["ci_low"] < -0.3 < fit["alignment"]["ci_high"] < 0
    assert fit["uniformity"]["ci_low"] < -0.1 < fit["uniformity"]["ci_high"] < 0
    assert fit["r2"] > 0.99
    trained = [r for r in rows[:30] if r["encoder.kind"] == "trained"]
    ref = stats.spearmanr([r["geometry_z.uniformity"] for r in trained],
                          [r["linear.test_acc"] for r in trained])
    assert fit["uniformity"]["spearman"] == pytest.approx(ref.statistic)
    # the random inits enter only the labelled reference fit (one more cluster)
    assert out["linear.test_acc.with_random_init"]["n"] == 30
    assert out["linear.test_acc.with_random_init"]["clusters"] == 9
    # too few configurations for clustered errors on two slopes: left out, not fitted on nothing
    small = alignment_uniformity(df.iloc[:4])["d"]["z"]
    assert "linear.test_acc" not in small


def test_primary_families_pair_over_their_own_seeds():
    """A loss compared in both families trains the union of their seeds; each family's contrast
    is paired over that family's seeds only (brute force: scipy on the family's seeds)."""
    from infonce_lab.aggregate import primary_comparisons

    rng = np.random.default_rng(1)
    acc = {(lo, s): float(rng.uniform(0.8, 0.95)) for lo in ("x", "y") for s in range(1, 7)}
    acc |= {("z", s): float(rng.uniform(0.8, 0.95)) for s in (1, 2, 3)}
    df = _frame([_row(lo, "s", s, 0.0, v) for (lo, s), v in acc.items()])
    out = primary_comparisons(df, "d-b", "s", [("primary", [1, 2, 3, 4, 5, 6], [("x", "y")]),
                                               ("secondary", [1, 2, 3], [("x", "z")])],
                              ["linear.test_acc"])
    first, second = out["d-b/x_vs_y@s/linear.test_acc"], out["d-b/x_vs_z@s/linear.test_acc"]
    assert (first["family"], second["family"]) == ("primary", "secondary")
    assert sorted(map(int, first["per_seed"])) == [1, 2, 3, 4, 5, 6]
    assert second["p_value"] == pytest.approx(stats.ttest_rel(
        [acc[("x", s)] for s in (1, 2, 3)], [acc[("z", s)] for s in (1, 2, 3)]).pvalue)
