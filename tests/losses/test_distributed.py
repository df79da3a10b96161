"""Two CPU processes (gloo) with N/2 rows each give the same loss and the same parameter
gradients as one process with N, for every loss: the gather's backward sums gradients across
processes, and DDP averages them. A loss that reads labels (the label oracle) gets each
process's labels gathered in the same rank order as the embeddings (``gather_rows``)."""

from __future__ import annotations

import os
import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from infonce_lab.losses import gather_rows, gather_with_grad
from infonce_lab.losses.objects import needs_labels
from infonce_lab.params import DirectAUConfig, InfoNCEConfig, WeinceConfig
from infonce_lab.pipeline.registry import LOSSES as REGISTERED
from infonce_lab.pipeline.registry import build_loss

# Every registered loss at its defaults (a loss added to the registry is tested here unasked),
# then the knobs that change what crosses processes: WEINCE's tail sets on a batch this small,
# the top-M terms, DCL, and SimCSE's cross-view candidates (every process scores the gathered
# view 1 against the gathered view 2).
LOSSES = {
    **{config().kind: config() for config in REGISTERED},
    "info_nce_dcl_topm": InfoNCEConfig(decoupled=True, topm_weight=0.5, top_m=5),
    "weince_tail8": WeinceConfig(min_tail_points=8),
    "weince_recipe": WeinceConfig(min_tail_points=8, beta="per_anchor", weib_topm_weight=0.5,
                                  pl_topm_weight=0.5, top_m=5),
    "info_nce_cross_view": InfoNCEConfig(candidates="cross_view", topm_weight=0.5, top_m=5),
    "weince_cross_view": WeinceConfig(min_tail_points=8, candidates="cross_view"),
    "weince_recipe_cross_view": WeinceConfig(min_tail_points=8, beta="per_anchor",
                                             weib_topm_weight=0.5, pl_topm_weight=0.5, top_m=5,
                                             candidates="cross_view"),
    "direct_au_t": DirectAUConfig(schedule_drives="t"),
    # the label oracle: its same-class masks span both processes' rows (LABELS below)
    "info_nce_oracle": InfoNCEConfig(mask_same_class=True),
    "info_nce_oracle_dcl_topm": InfoNCEConfig(mask_same_class=True, decoupled=True,
                                              topm_weight=0.5, top_m=5),
    "info_nce_oracle_cross_view": InfoNCEConfig(mask_same_class=True, candidates="cross_view",
                                                topm_weight=0.5, top_m=5),
}
N, D_IN, D_OUT = 16, 10, 6
# Classes of the N pairs: every class on both halves of the batch, one pair unlabelled (−1)
LABELS = torch.tensor([0, 1, 2, 0, 3, 1, -1, 2, 2, 0, 1, 3, 3, 0, 2, 1])


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(D_IN, 12), nn.Tanh(), nn.Linear(12, D_OUT)).double()


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x1 = torch.randn(N, D_IN, generator=g, dtype=torch.float64)
    return x1, x1 + 0.3 * torch.randn(N, D_IN, generator=g, dtype=torch.float64)


def _loss_and_grads(model: nn.Module, x1, x2, name: str, labels: torch.Tensor):  # noqa: ANN001
    z1, z2 = gather_with_grad(model(x1)), gather_with_grad(model(x2))
    loss_fn = build_loss(LOSSES[name])
    if needs_labels(loss_fn):
        loss, _ = loss_fn(z1, z2, 0.4, labels=gather_rows(labels))
    else:
        loss, _ = loss_fn(z1, z2, 0.4)
    loss.backward()
    # numpy, not tensors: torch's queue would share tensor storage with a process about to exit
    return float(loss.detach()), [p.grad.detach().numpy().copy() for p in model.parameters()]


def _worker(rank: int, world: int, port: int, queue) -> None:  # noqa: ANN001
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    try:
        x1, x2 = _data()
        part = slice(rank * N // world, (rank + 1) * N // world)
        out = {}
        for name in LOSSES:
            model = DDP(_model())
            out[name] = _loss_and_grads(model, x1[part], x2[part], name, LABELS[part])
        queue.put((rank, out))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_process_results():
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, 2, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_two_processes_equal_one(two_process_results, name):
    x1, x2 = _data()
    ref_loss, ref_grads = _loss_and_grads(_model(), x1, x2, name, LABELS)
    for rank in (0, 1):
        loss, grads = two_process_results[rank][name]
        assert loss == pytest.approx(ref_loss, rel=1e-12)
        for g, r in zip(grads, ref_grads, strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
