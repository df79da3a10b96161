"""simulate: one simulation experiment (annealed Langevin trapping on S0 and S1, Hessian
sharpening, large-N limits, Gibbs equilibrium, modality gap, the link theory) into
reports/sims/<experiment>.json (infonce_lab.pipeline.simulate)."""

from __future__ import annotations

import typer

from infonce_lab.stage import params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(experiment: str | None = typer.Option(None, metavar="NAME", help="an experiment of simulation.experiments")) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.simulate import simulate

    experiment = stage_instance(experiment=experiment)["experiment"]
    result = simulate(params, experiment)
    print(f"{experiment}: {result['seconds']:.1f}s")


if __name__ == "__main__":
    app()
