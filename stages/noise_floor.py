"""noise_floor: the synthetic estimation experiment of SPECS B.10 (WEINCE Fig. 5) into
reports/tails/noise_floor.json. It does not depend on any run."""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.io import write_json_atomic
from infonce_lab.tails.noise_floor import noise_floor

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main() -> None:
    cfg = params_or_exit().tails.noise_floor
    result = noise_floor(scores=tuple(cfg.scores), beta=cfg.beta, ns=tuple(cfg.ns),
                         replicates=cfg.replicates, seed=cfg.seed)
    write_json_atomic(Path("reports/tails/noise_floor.json"), {"params": cfg.model_dump(), **result})
    print(f"noise floor: softmax floor {result['softmax_floor']:.4f}, Weibit MSE at n = "
          f"{cfg.ns[-1]}: {result['mse_weibit'][-1]:.5f}")


if __name__ == "__main__":
    app()
