"""The training loop under DDP (2 CPU processes, gloo): each process trains on its half of every
global batch, the loss sees the gathered global batch, and the replicas' parameters stay
identical — the property DDP must keep; rank 0 alone writes the resume state."""

from __future__ import annotations

import os
import socket

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from infonce_lab.params import (
    DigitsAugment,
    FixedSchedule,
    ResNetConfig,
    TrainingConfig,
    WeinceConfig,
)
from infonce_lab.pipeline.pretrain import train_image
from infonce_lab.train.checkpointing import load_state
from infonce_lab.train.loop import Resume


def _worker(rank: int, world: int, port: int, x: np.ndarray, state_path: str, queue) -> None:  # noqa: ANN001
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        cfg = TrainingConfig(epochs=2, batch_size=64, warmup_epochs=0, threads=1,
                             checkpoint_every_steps=5)
        res = train_image(x, backbone=ResNetConfig(widths=[8], blocks=[1], head_hidden=8,
                                                     head_dim=4),
                            loss=WeinceConfig(min_tail_points=8), schedule=FixedSchedule(tau=0.5),
                            augment=DigitsAugment(), training=cfg, seed=0,
                            resume=Resume(__import__("pathlib").Path(state_path), "ddp", 5))
        queue.put((rank, res.steps, res.final_loss,
                   {k: v.numpy().copy() for k, v in res.encoder.state_dict().items()}))
    finally:
        dist.destroy_process_group()


def test_two_processes_keep_identical_replicas(tmp_path, digits_splits):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    x = digits_splits.train_x[:640]
    procs = [ctx.Process(target=_worker, args=(r, 2, port, x, str(tmp_path / "s.pt"), queue))
             for r in range(2)]
    for p in procs:
        p.start()
    out = dict((r, (steps, loss, sd)) for r, steps, loss, sd in (queue.get(timeout=300)
                                                                for _ in procs))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    (s0, l0, w0), (s1, l1, w1) = out[0], out[1]
    assert s0 == s1 == 20 and np.isfinite(l0) and l0 == l1  # both saw the same global loss
    for k in w0:
        if "running_" not in k:  # BN statistics: each rank's last local batch (DDP broadcasts
            np.testing.assert_array_equal(w0[k], w1[k], err_msg=k)  # them at the next forward)
    state = load_state(tmp_path / "s.pt", "ddp")
    assert state is not None and state["step"] == 15
    assert all(torch.is_tensor(v) for v in state["model"].values())
