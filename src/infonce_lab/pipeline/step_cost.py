"""The step_cost stage: the loss stage's cost inside a training step at the WEINCE paper's shapes
(``step_cost:``), written to ``paths.step_cost()`` with the machine that measured it."""

from __future__ import annotations

from typing import Any

import torch

from infonce_lab.io import write_json_atomic
from infonce_lab.machine import cpu_model
from infonce_lab.models.build import init_encoder
from infonce_lab.params import Params
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.registry import build_loss
from infonce_lab.train.step_cost import loss_overhead, loss_share, ratio, step_cost


def measure_step_cost(params: Params) -> dict[str, Any]:
    cfg = params.step_cost
    torch.set_num_threads(params.training.threads)
    encoder = init_encoder(params.backbones[cfg.backbone], cfg.channels, cfg.seed, cfg.image_size)
    gen = torch.Generator().manual_seed(cfg.seed)
    views = torch.rand(2 * cfg.batch, cfg.channels, cfg.image_size, cfg.image_size,
                       generator=gen)
    losses = {name: build_loss(params.losses[name]) for name in (cfg.reference, cfg.treatment)}
    times = step_cost(encoder, losses, views, cfg.tau, cfg.steps, cfg.loss_repeats)
    ref, treat = cfg.reference, cfg.treatment
    result = {
        "params": cfg.model_dump(), "machine": cpu_model(), "threads": params.training.threads,
        "architecture": params.backbones[cfg.backbone].model_dump(mode="json"),
        "kinds": {n: params.losses[n].kind for n in losses}, **times,
        "share": {n: loss_share(times["step_ms"][n], times["loss_ms"][n]) for n in losses},
        "step_ratio": ratio(times["step_ms"][treat], times["step_ms"][ref]),
        "loss_ratio": ratio(times["loss_ms"][treat], times["loss_ms"][ref]),
        "overhead": loss_overhead(times["step_ms"][ref], times["loss_ms"][treat],
                                  times["loss_ms"][ref]),
    }
    write_json_atomic(paths.step_cost(), result)
    return result
