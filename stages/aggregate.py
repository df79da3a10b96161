"""aggregate: mean and spread over seeds → reports/summary.json and reports/tables/*.csv."""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.aggregate import collect, summarise
from infonce_lab.cli import params_or_exit, stage
from infonce_lab.io import write_json_atomic, write_text_atomic

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main() -> None:
    params = params_or_exit()
    df = collect(params)
    summary = summarise(df)
    write_text_atomic(Path("reports/tables/encoders.csv"), df.to_csv(index=False, float_format="%.6f"))
    rows = []
    for group, s in summary.items():
        row = {"group": group, "kind": s["kind"], "n_encoders": s["n_encoders"]}
        for metric in ("linear.test_acc", "linear.val_acc", "knn.test_acc", "knn.val_acc"):
            row[f"{metric}.mean"] = s[metric]["mean"]
            row[f"{metric}.ci95"] = s[metric]["ci95"]
        rows.append(row)
    import pandas as pd

    write_text_atomic(Path("reports/tables/summary.csv"),
                      pd.DataFrame(rows).to_csv(index=False, float_format="%.6f"))
    write_json_atomic(Path("reports/summary.json"), {"groups": summary})
    for group, s in summary.items():
        m = s["linear.test_acc"]
        print(f"{group}: linear test {m['mean']:.4f} ± {m['ci95']:.4f} (n={m['n']})")


if __name__ == "__main__":
    app()
