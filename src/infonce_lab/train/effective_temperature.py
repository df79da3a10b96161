"""WEINCE's effective temperature before training, measured on the run's own first batches: how
the text study's InfoNCE temperature control is set before any run (params.yaml,
``losses.simcse_infonce_tc``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from infonce_lab.losses.objects import Loss
from infonce_lab.train.loop import BatchSource
from infonce_lab.train.runtime import seed_everything


@torch.no_grad()
def effective_temperature_at_start(source: BatchSource, encoder: nn.Module, loss_fn: Loss,
                                   tau: float, *, batch_size: int, seed: int,
                                   threads: int | None = None, batches: int = 5
                                   ) -> dict[str, float]:
    """The first ``batches`` batches of the run with ``seed`` (its own order and dropout masks,
    the encoder in train mode, no update), and per batch the anchor mean of κ_i
    (:func:`infonce_lab.losses.weince.effective_inverse_temperature`).

    Returns the mean κ over the batches, its inverse ``tau_eff`` (the InfoNCE temperature with
    WEINCE's mean logit slope between positives and hardest negatives), λ̄ and the number of
    anchors.
    """
    seed_everything(seed, threads)
    encoder.train()
    perm = source.order()
    kappas, lams, anchors = [], [], 0
    for b in range(batches):
        idx = perm[b * batch_size:(b + 1) * batch_size]
        if len(idx) < batch_size:
            break
        inputs = source.inputs(idx)
        _, z = encoder(**inputs) if isinstance(inputs, dict) else encoder(inputs)
        _, stats = loss_fn(*(v.float() for v in z.chunk(2)), tau)
        if "inv_tau_eff" not in stats:
            raise ValueError(f"{type(loss_fn).__name__} reports no effective temperature")
        kappas.append(float(stats["inv_tau_eff"].mean()))
        lams.append(float(stats["lambda"].mean()))
        anchors += int(stats["inv_tau_eff"].numel())
    if not kappas:
        raise ValueError(f"{source.n} examples: not one batch of {batch_size}")
    kappa = float(np.mean(kappas))
    return {"inv_tau_eff_mean": kappa, "tau_eff": 1.0 / kappa, "lambda_mean": float(np.mean(lams)),
            "anchors": float(anchors), "batches": float(len(kappas))}
