"""The simulate stage: run one experiment — the simulation function its params section names
(:class:`~infonce_lab.params.ExperimentConfig` ``RUNS``) on that section's fields — and write
``paths.sim_result(experiment)``."""

from __future__ import annotations

import time
from typing import Any

import torch

from infonce_lab.io import write_json_atomic
from infonce_lab.params import Params, SimulationConfig, experiment_names
from infonce_lab.pipeline import paths
from infonce_lab.simulation import runner


def run_experiment(name: str, cfg: SimulationConfig) -> dict[str, Any]:
    if name not in experiment_names():
        raise ValueError(f"unknown experiment {name!r}: expected one of "
                         f"{', '.join(experiment_names())}")
    section = getattr(cfg, name)
    return runner(type(section).RUNS)(**section.model_dump())


def simulate(params: Params, experiment: str) -> dict[str, Any]:
    torch.set_num_threads(params.training.threads)
    t0 = time.perf_counter()
    result = run_experiment(experiment, params.simulation)
    result = {"experiment": experiment,
              "params": getattr(params.simulation, experiment).model_dump(),
              "seconds": time.perf_counter() - t0, **result}
    write_json_atomic(paths.sim_result(experiment), result)
    return result
