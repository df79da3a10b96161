"""The text study under DDP (2 CPU processes, gloo) through the same loop as the images: each
process encodes its half of every global batch, the loss sees the gathered batch, and the
replicas' weights stay identical; rank 0 alone writes the resume state. Each rank draws its own
dropout masks — its only augmentation — rather than rank 0's (every rank is seeded alike)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from test_text_resume import SENTENCES, TINY

from infonce_lab.params import (
    FixedSchedule,
    TextTrainingConfig,
    TransformerEncoderConfig,
    WeinceConfig,
)
from infonce_lab.train.checkpointing import load_state
from infonce_lab.train.loop import Resume


def _worker(rank: int, world: int, port: int, state: str, queue) -> None:  # noqa: ANN001
    from infonce_lab.data.text_tokens import tokenise_sentences
    from infonce_lab.models.text import build_sentence_encoder, load_tokenizer
    from infonce_lab.pipeline.text_pretrain import train_text

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        cfg = TransformerEncoderConfig(pooling="mean", random_init=True, overrides=TINY)
        tok = load_tokenizer(cfg)
        encoder = build_sentence_encoder(cfg, 0)
        masks: list[np.ndarray] = []   # the first dropout layer's first mask, in memory order
        dropout = next(m for m in encoder.modules() if isinstance(m, torch.nn.Dropout))
        dropout.register_forward_hook(
            lambda m, i, o: masks.append((o == 0).flatten()[:2000].numpy().copy())
            if m.training and not masks else None)
        res = train_text(tokenise_sentences(SENTENCES, tok, 16),
                         encoder=encoder, tokenizer=tok,
                         loss=WeinceConfig(min_tail_points=3, candidates="cross_view"),
                         schedule=FixedSchedule(tau=0.1), seed=0,
                         training=TextTrainingConfig(epochs=3, batch_size=8, lr=1e-3,
                                                     max_length=16, threads=1,
                                                     checkpoint_every_steps=2),
                         resume=Resume(Path(state), "ddp", 2))
        queue.put((rank, res.steps, res.final_loss,
                   {k: v.numpy().copy() for k, v in res.encoder.state_dict().items()}, masks[0]))
    finally:
        dist.destroy_process_group()


def test_two_processes_keep_identical_text_replicas(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, 2, port, str(tmp_path / "s.pt"), queue))
             for r in range(2)]
    for p in procs:
        p.start()
    out = {r: rest for r, *rest in (queue.get(timeout=150) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    (s0, l0, w0, m0), (s1, l1, w1, m1) = out[0], out[1]
    # same-seeded ranks would draw identical masks in memory order; about 10% of units dropped
    assert 0.02 < m0.mean() < 0.3 and 0.02 < m1.mean() < 0.3
    assert (m0 != m1).mean() > 0.05
    assert s0 == s1 == 3 * (len(SENTENCES) // 8) and np.isfinite(l0) and l0 == l1
    for k in w0:
        np.testing.assert_array_equal(w0[k], w1[k], err_msg=k)
    assert load_state(tmp_path / "s.pt", "ddp")["step"] == 8  # rank 0 wrote it
