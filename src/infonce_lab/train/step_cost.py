"""What a loss costs inside a training step (the WEINCE paper's "Computational overhead", §3):
the loss stage's forward and backward on its own, and the full step with each loss, measured
side by side on one machine. Numbers in (an encoder, losses, views), milliseconds out.

Interleaved: the losses take turns, their order reversed every round, so a machine that slows
down or speeds up during the measurement (shared, thermal) moves every loss alike; each loss
gets one untimed step first (allocator, first-call dispatch).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from infonce_lab.losses.objects import Loss


def _ms(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return 1e3 * (time.perf_counter() - t0)


def _rounds(names: list[str], rounds: int) -> list[list[str]]:
    """Each round's order: the names, reversed every other round."""
    return [names if r % 2 == 0 else names[::-1] for r in range(rounds)]


def step_cost(encoder: nn.Module, losses: Mapping[str, Loss], views: torch.Tensor, tau: float,
              steps: int, loss_repeats: int) -> dict[str, Any]:
    """Times, per loss: ``step_ms`` (``steps`` full steps: the encoder on the 2N ``views`` — the
    first N and the last N are the two views of N images —, the loss on the projections,
    backward, an SGD step) and ``loss_ms`` (``loss_repeats`` loss stages: forward and backward
    of the loss alone, on the projections of those views). ``encoder`` returns (h, z)."""
    names = list(losses)
    opt = torch.optim.SGD(encoder.parameters(), lr=1e-3, momentum=0.9)
    encoder.train()

    def full_step(name: str) -> None:
        _, z = encoder(views)
        loss, _ = losses[name](*z.chunk(2), tau)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    with torch.no_grad():
        z = encoder(views)[1].detach()
    z1, z2 = (t.clone().requires_grad_(True) for t in z.chunk(2))

    def loss_stage(name: str) -> None:
        z1.grad = z2.grad = None
        loss, _ = losses[name](z1, z2, tau)
        loss.backward()

    for name in names:  # untimed: the first call of each pays for allocation and dispatch
        full_step(name)
        loss_stage(name)
    step_ms: dict[str, list[float]] = {n: [] for n in names}
    loss_ms: dict[str, list[float]] = {n: [] for n in names}
    for order in _rounds(names, steps):
        for name in order:
            step_ms[name].append(_ms(lambda n=name: full_step(n)))
    for order in _rounds(names, loss_repeats):
        for name in order:
            loss_ms[name].append(_ms(lambda n=name: loss_stage(n)))
    return {"views": int(views.shape[0]), "dim": int(z.shape[1]), "step_ms": step_ms,
            "loss_ms": loss_ms}


def loss_share(step_ms: list[float], loss_ms: list[float]) -> dict[str, float]:
    """The loss stage's share of a full step: medians' ratio, with a range from the loss
    stage's 10% and 90% quantiles over the slowest and the fastest step (a bound, not an
    interval: it holds every timing the run saw)."""
    step, loss = np.asarray(step_ms), np.asarray(loss_ms)
    lo, hi = np.quantile(loss, [0.1, 0.9])
    return {"value": float(np.median(loss) / np.median(step)),
            "low": float(lo / step.max()), "high": float(hi / step.min())}


def ratio(num_ms: list[float], den_ms: list[float]) -> dict[str, float]:
    """Medians' ratio of two timing series, with a range from their 10% and 90% quantiles."""
    (n_lo, n_hi), (d_lo, d_hi) = np.quantile(num_ms, [0.1, 0.9]), np.quantile(den_ms, [0.1, 0.9])
    return {"value": float(np.median(num_ms) / np.median(den_ms)),
            "low": float(n_lo / d_hi), "high": float(n_hi / d_lo)}


def loss_overhead(step_ms: list[float], loss_ms: list[float], reference_loss_ms: list[float]
                  ) -> dict[str, float]:
    """The end-to-end overhead of a loss over the reference's step, as the difference of their
    loss stages over the reference's full step: the two steps differ only in the loss, and the
    loss stages are timed hundreds of times where a full step is timed a few (the direct ratio
    of step times cannot resolve a fraction of a percent on a shared machine). Range: the loss
    stages' 10% and 90% quantiles over the slowest and the fastest step."""
    step = np.asarray(step_ms)
    (t_lo, t_hi), (r_lo, r_hi) = (np.quantile(loss_ms, [0.1, 0.9]),
                                  np.quantile(reference_loss_ms, [0.1, 0.9]))
    value = (np.median(loss_ms) - np.median(reference_loss_ms)) / np.median(step)
    low, high = (t_lo - r_hi), (t_hi - r_lo)
    return {"value": float(value), "low": float(low / (step.max() if low > 0 else step.min())),
            "high": float(high / (step.min() if high > 0 else step.max()))}
