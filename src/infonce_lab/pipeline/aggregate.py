"""The aggregate stage: per-encoder metrics → summaries over seeds, paired comparisons, the
validation selection, the alignment–uniformity fit, the tail and text summaries
(reports/summary.json, reports/tables/*.csv)."""

from __future__ import annotations

from pathlib import Path

from infonce_lab.aggregate import (
    IncompleteSeeds,
    alignment_uniformity,
    collect,
    collect_text,
    metric_columns,
    paired_comparisons,
    pooled_over_schedules,
    primary_comparisons,
    select_on_validation,
    selection_inflation,
    summarise,
    summarise_tails,
    summarise_text,
    summarise_text_tails,
)
from infonce_lab.io import replaced_together, write_text_atomic
from infonce_lab.params import Params


def write_aggregates(params: Params) -> None:
    """reports/summary.json and reports/tables/*.csv from every run's metrics and diagnostics."""
    df = collect(params)
    summary = summarise(df)
    pr = params.primary
    primary_groups = {r.run_id.config.to_str() for r in params.primary_runs()}
    grid = df[~df["group"].isin(primary_groups)]
    try:
        # The grid's comparisons and selection never include the primary block's runs, nor the
        # reverse: the primary is decided on its own runs only.
        paired = paired_comparisons(grid)
        primary = primary_comparisons(
            df, f"{pr.dataset}-{pr.backbone}", pr.schedule,
            [(name, seeds, [(c.treatment, c.reference) for c in contrasts])
             for name, seeds, contrasts in pr.families()], list(pr.metrics))
    except IncompleteSeeds as exc:
        raise ValueError(str(exc)) from None
    selection = select_on_validation(grid, summary)
    au = alignment_uniformity(df)
    inflation = selection_inflation(df)
    tails = summarise_tails(params)
    text_tails = summarise_text_tails(params)
    text_df = collect_text(params)
    text = summarise_text(text_df)
    tail_rows = [{"group": g, "epoch": int(e), "metric": m, "mean": v["mean"], "ci95": v["ci95"],
                  "n": v["n"]}
                 for g, t in tails.items() for e, ms in t["by_epoch"].items() for m, v in ms.items()]
    rows = []
    for group, s in summary.items():
        row = {"group": group, "kind": s["kind"], "n_encoders": s["n_encoders"]}
        for metric in metric_columns(df):
            if metric in s:
                row[f"{metric}.mean"] = s[metric]["mean"]
                row[f"{metric}.ci95"] = s[metric]["ci95"]
        rows.append(row)
    paired_rows = [{"comparison": k, "block": v.get("family", "grid"),
                    "a": v["a"], "b": v["b"], "metric": v["metric"],
                    "diff_mean": v["diff"]["mean"], "diff_ci95": v["diff"]["ci95"],
                    "n": v["diff"]["n"], "mde_80": v.get("mde_80"), "p_value": v["p_value"]}
                   for k, v in (paired | primary).items()]
    selection_rows = [{"scope": k, "selected": v["selected"], "selected_by": v["by"],
                       "val_mean": v["val"]["mean"], "test_mean": v["test"]["mean"],
                       "test_ci95": v["test"]["ci95"]} for k, v in selection.items()]
    import pandas as pd

    with replaced_together() as outputs:
        tables = outputs.dir(Path("reports/tables"))
        for name, frame in (("encoders", df), ("summary", pd.DataFrame(rows)),
                            ("paired", pd.DataFrame(paired_rows)),
                            ("selection", pd.DataFrame(selection_rows)),
                            ("tails", pd.DataFrame(tail_rows)), ("text", text_df)):
            write_text_atomic(tables / f"{name}.csv", frame.to_csv(index=False, float_format="%.6f"))
        outputs.json(Path("reports/summary.json"),
                     {"groups": summary, "paired": paired,
                      "pooled": pooled_over_schedules(paired, grid), "primary": primary,
                      "selection": selection, "tails": tails,
                      "text": text, "alignment_uniformity": au,
                      "selection_inflation": inflation,
                      **({"text_tails": text_tails} if text_tails else {})})
    for group, s in summary.items():
        m = s["linear.test_acc"]
        ci = "" if m["ci95"] is None else f" ± {m['ci95']:.4f}"
        print(f"{group}: linear test {m['mean']:.4f}{ci} (n={m['n']})")
    for group, s in text["groups"].items():
        print(f"text {group}: STS Spearman {s['sts.test_spearman']['mean']:.2f} "
              f"(n={s['n_encoders']})")
