"""simulate: one experiment on the annealing and geometry papers or Wang–Isola's Theorem 1
(annealed Langevin trapping on S0 and S1, Hessian sharpening, large-N limits, Gibbs equilibrium,
modality gap) into reports/sims/<experiment>.json."""

from __future__ import annotations

import time
from pathlib import Path

import torch
import typer

from infonce_lab.cli import fail, params_or_exit, stage
from infonce_lab.io import write_json_atomic
from infonce_lab.simulation.experiments import EXPERIMENTS, run_experiment

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(experiment: str = typer.Option(..., help=f"one of {', '.join(EXPERIMENTS)}")) -> None:
    params = params_or_exit()
    if experiment not in EXPERIMENTS:
        fail(f"--experiment {experiment!r}: expected one of {', '.join(EXPERIMENTS)}")
    torch.set_num_threads(params.training.threads)
    t0 = time.perf_counter()
    result = run_experiment(experiment, params.simulation)
    result = {"experiment": experiment, "params": getattr(params.simulation, experiment).model_dump(),
              "seconds": time.perf_counter() - t0, **result}
    write_json_atomic(Path("reports/sims") / f"{experiment}.json", result)
    print(f"{experiment}: {result['seconds']:.1f}s")


if __name__ == "__main__":
    app()
