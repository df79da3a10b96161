"""aggregate: mean and spread over seeds → reports/summary.json and reports/tables/*.csv."""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.aggregate import collect, summarise
from infonce_lab.cli import params_or_exit, stage
from infonce_lab.io import atomic_dir, write_json_atomic, write_text_atomic

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main() -> None:
    params = params_or_exit()
    df = collect(params)
    summary = summarise(df)
    rows = []
    for group, s in summary.items():
        row = {"group": group, "kind": s["kind"], "n_encoders": s["n_encoders"]}
        for metric in ("linear.test_acc", "linear.val_acc", "knn.test_acc", "knn.val_acc"):
            row[f"{metric}.mean"] = s[metric]["mean"]
            row[f"{metric}.ci95"] = s[metric]["ci95"]
        rows.append(row)
    import pandas as pd

    with atomic_dir(Path("reports/tables")) as tables:
        write_text_atomic(tables / "encoders.csv", df.to_csv(index=False, float_format="%.6f"))
        write_text_atomic(tables / "summary.csv",
                          pd.DataFrame(rows).to_csv(index=False, float_format="%.6f"))
    write_json_atomic(Path("reports/summary.json"), {"groups": summary})
    for group, s in summary.items():
        m = s["linear.test_acc"]
        ci = "" if m["ci95"] is None else f" ± {m['ci95']:.4f}"
        print(f"{group}: linear test {m['mean']:.4f}{ci} (n={m['n']})")


if __name__ == "__main__":
    app()
