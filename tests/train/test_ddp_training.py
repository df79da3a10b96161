"""The training loop under DDP (2 CPU processes, gloo): each process trains on its half of every
global batch, the loss sees the gathered global batch, and the replicas' parameters stay
identical — the property DDP must keep; rank 0 alone writes the resume state. The label oracle
(``mask_same_class``) trains the same way, each process's labels gathered with its rows."""

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
    InfoNCEConfig,
    ResNetConfig,
    TrainingConfig,
    WeinceConfig,
)
from infonce_lab.pipeline.pretrain import train_image
from infonce_lab.train.checkpointing import load_state
from infonce_lab.train.loop import Resume


def _worker(rank: int, world: int, port: int, x: np.ndarray, y: np.ndarray, state_path: str,
            queue) -> None:  # noqa: ANN001
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
        # a loss that reads labels: a rank handing it only its own half would be refused (N/2
        # labels for N pairs); gathered, both ranks score the same global batch
        oracle = train_image(x, backbone=ResNetConfig(widths=[8], blocks=[1], head_hidden=8,
                                                        head_dim=4),
                               loss=InfoNCEConfig(mask_same_class=True),
                               schedule=FixedSchedule(tau=0.5), augment=DigitsAugment(),
                               training=cfg.model_copy(update={"epochs": 1}), seed=0, y=y)
        queue.put((rank, res.steps, res.final_loss,
                   {k: v.numpy().copy() for k, v in res.encoder.state_dict().items()},
                   oracle.final_loss,
                   {k: v.numpy().copy() for k, v in oracle.encoder.state_dict().items()}))
    finally:
        dist.destroy_process_group()


def test_two_processes_keep_identical_replicas(tmp_path, digits_splits):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    x, y = digits_splits.train_x[:640], digits_splits.train_y[:640]
    procs = [ctx.Process(target=_worker, args=(r, 2, port, x, y, str(tmp_path / "s.pt"), queue))
             for r in range(2)]
    for p in procs:
        p.start()
    out = dict((r, rest) for r, *rest in (queue.get(timeout=300) for _ in procs))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    (s0, l0, w0, o0, ow0), (s1, l1, w1, o1, ow1) = out[0], out[1]
    assert s0 == s1 == 20 and np.isfinite(l0) and l0 == l1  # both saw the same global loss
    assert np.isfinite(o0) and o0 == o1
    for a, b in ((w0, w1), (ow0, ow1)):
        for k in a:
            if "running_" not in k:  # BN statistics: each rank's last local batch (DDP
                np.testing.assert_array_equal(a[k], b[k], err_msg=k)  # broadcasts them next)
    state = load_state(tmp_path / "s.pt", "ddp")
    assert state is not None and state["step"] == 15
    assert all(torch.is_tensor(v) for v in state["model"].values())
