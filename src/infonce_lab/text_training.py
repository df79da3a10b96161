"""Unsupervised SimCSE: each sentence is encoded twice and dropout is the only augmentation.

The loss and the temperature schedule are the image study's own objects (``build_loss``,
``build_schedule``): SimCSE's InfoNCE at τ = 0.05 is ``losses.infonce`` with a fixed schedule,
and WEINCE replaces only the logits, as in the paper (WEINCE §4.2). Like ``training.py`` the loop
does no file I/O: telemetry, checkpoints and validation are callbacks.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from infonce_lab.config import LossConfig, ScheduleConfig
from infonce_lab.config_text import TextTrainingConfig
from infonce_lab.losses import build_loss, gather_with_grad
from infonce_lab.losses.telemetry import step_record
from infonce_lab.models.text import SentenceEncoder, tokenize
from infonce_lab.runtime import (
    FiniteGuard,
    is_rank0,
    lr_at,
    resolve_device,
    seed_everything,
)
from infonce_lab.schedules import build_schedule

LogFn = Callable[[int, dict[str, float]], None]
CheckpointFn = Callable[[int, SentenceEncoder], None]
ValidateFn = Callable[[SentenceEncoder], float]


@dataclass
class TextTrainResult:
    encoder: SentenceEncoder
    loss_state: dict[str, Any]
    steps: int
    seconds: float
    samples_per_s: float
    final_loss: float
    selected_step: int
    val_history: list[tuple[int, float]]
    # Means over every training step of the loss's per-anchor statistics (anchor mean per step):
    # WEINCE's λ and effective inverse temperature κ (``losses.weince``); empty for other losses.
    train_stats: dict[str, float] = field(default_factory=dict)


# Per-anchor loss statistics averaged over the whole run (not only the logged steps).
RUN_STATS = ("inv_tau_eff", "lambda")


def total_steps(n_sentences: int, cfg: TextTrainingConfig) -> tuple[int, int]:
    """(steps per epoch, total steps): full batches only (drop_last), capped by max_steps."""
    per_epoch = n_sentences // cfg.batch_size
    total = per_epoch * cfg.epochs
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    return per_epoch, total


def train_sentence_encoder(
    sentences: list[str],
    *,
    encoder: SentenceEncoder,
    tokenizer: Any,
    loss: LossConfig,
    schedule: ScheduleConfig,
    training: TextTrainingConfig,
    seed: int,
    validate: ValidateFn | None = None,
    on_log: LogFn | None = None,
    on_checkpoint: CheckpointFn | None = None,
) -> TextTrainResult:
    device = resolve_device(training.device)
    seed_everything(seed, training.threads)
    per_epoch, total = total_steps(len(sentences), training)
    if per_epoch == 0:
        raise ValueError(f"text.training.batch_size = {training.batch_size} exceeds the "
                         f"{len(sentences)} training sentences")
    encoder = encoder.to(device)
    loss_fn = build_loss(loss)
    sched = build_schedule(schedule, per_epoch)
    opt_cls = torch.optim.AdamW if training.optimizer == "adamw" else torch.optim.Adam
    # The fused kernel is the same update as the per-tensor loop in one pass over all parameters
    # (equal to float rounding): ≈ 0.04 instead of ≈ 0.25 CPU-s per MiniLM step (≈ 3% of it).
    opt = opt_cls(encoder.parameters(), lr=training.lr, weight_decay=training.weight_decay,
                  fused=device.type in ("cpu", "cuda"))
    gen = np.random.default_rng(seed)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    checkpoints = set(training.checkpoint_steps)
    val_history: list[tuple[int, float]] = []
    best: tuple[float, int, dict[str, torch.Tensor] | None] = (-math.inf, 0, None)

    def run_validation(step: int) -> None:
        nonlocal best
        if validate is None:
            return
        score = float(validate(encoder))
        encoder.train()
        val_history.append((step, score))
        if training.selection == "best_val" and score > best[0]:
            best = (score, step, copy.deepcopy(encoder.state_dict()))

    encoder.train()
    step, t0, last = 0, time.perf_counter(), float("nan")
    guard = FiniteGuard(device)
    advice = "lower text.training.lr or raise the temperature"
    window_t, window_n = time.perf_counter(), 0
    run_sums: dict[str, torch.Tensor] = {}
    while step < total:
        perm = gen.permutation(len(sentences))
        for b in range(per_epoch):
            if step >= total:
                break
            batch = [sentences[i] for i in perm[b * training.batch_size:(b + 1) * training.batch_size]]
            # The same sentences twice in one forward pass: the two rows of a pair see
            # independent dropout masks, which is SimCSE's whole augmentation.
            inputs = tokenize(tokenizer, batch + batch, training.max_length, device)
            tau = sched.tau(step)
            lr = lr_at(step, total, training.warmup_steps, training.lr, training.lr_schedule)
            for g in opt.param_groups:
                g["lr"] = lr
            with autocast:
                _, z = encoder(**inputs)
            z1, z2 = (gather_with_grad(v.float()) for v in z.chunk(2))  # loss in float32
            value, stats = loss_fn(z1, z2, tau)
            for key in RUN_STATS:
                if key in stats:  # on the device, no sync
                    mean = stats[key].detach().double().mean()
                    run_sums[key] = run_sums[key] + mean if key in run_sums else mean
            guard.update(value, step)
            opt.zero_grad(set_to_none=True)
            value.backward()
            if training.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(encoder.parameters(), training.max_grad_norm)
            opt.step()
            last_t = value.detach()
            window_n += 2 * len(batch)
            step += 1
            if on_log is not None and is_rank0() and (
                step % training.log_every_steps == 0 or step == total
            ):
                guard.check(advice)
                last = float(last_t)
                now = time.perf_counter()
                record = step_record(z1, z2, stats, loss=last, lr=lr,
                                     epoch=1 + (step - 1) // per_epoch,
                                     samples_per_s=window_n / max(now - window_t, 1e-9),
                                     tau=tau,
                                     candidates=getattr(loss_fn, "candidates", "all_views"))
                on_log(step, record)
                window_t, window_n = time.perf_counter(), 0
            if training.eval_every_steps and step % training.eval_every_steps == 0:
                run_validation(step)
            if on_checkpoint is not None and step in checkpoints:
                guard.check(advice)
                on_checkpoint(step, encoder)
    guard.check(advice)
    if step:
        last = float(last_t)
    if training.eval_every_steps and (not val_history or val_history[-1][0] != step):
        run_validation(step)
    seconds = time.perf_counter() - t0
    selected = step
    if training.selection == "best_val" and best[2] is not None:
        encoder.load_state_dict(best[2])
        selected = best[1]
    encoder.eval()
    return TextTrainResult(
        encoder=encoder, loss_state=loss_fn.state_dict(), steps=step, seconds=seconds,
        samples_per_s=2 * step * training.batch_size / max(seconds, 1e-9), final_loss=last,
        selected_step=selected, val_history=val_history,
        train_stats={f"{k}_mean": float(v) / step for k, v in run_sums.items()} if step else {},
    )


@torch.no_grad()
def effective_temperature_at_start(
    sentences: list[str],
    *,
    encoder: SentenceEncoder,
    tokenizer: Any,
    loss: LossConfig,
    tau: float,
    training: TextTrainingConfig,
    seed: int,
    batches: int = 5,
) -> dict[str, float]:
    """WEINCE's effective temperature before training: the first ``batches`` batches of the run
    with ``seed`` (its own order and dropout masks, the encoder in train mode, no update), and
    per batch the anchor mean of κ_i (:func:`infonce_lab.losses.weince.effective_inverse_temperature`).

    Returns the mean κ over the batches, its inverse ``tau_eff`` (the InfoNCE temperature with
    WEINCE's mean logit slope between positives and hardest negatives), λ̄ and the number of
    anchors. This is how the text study's InfoNCE temperature control is set before any run.
    """
    device = resolve_device(training.device)
    seed_everything(seed, training.threads)
    encoder = encoder.to(device).train()
    loss_fn = build_loss(loss)
    perm = np.random.default_rng(seed).permutation(len(sentences))
    kappas, lams, anchors = [], [], 0
    for b in range(batches):
        idx = perm[b * training.batch_size:(b + 1) * training.batch_size]
        if len(idx) < training.batch_size:
            break
        batch = [sentences[i] for i in idx]
        _, z = encoder(**tokenize(tokenizer, batch + batch, training.max_length, device))
        _, stats = loss_fn(*(v.float() for v in z.chunk(2)), tau)
        if "inv_tau_eff" not in stats:
            raise ValueError(f"losses of kind {loss.kind} report no effective temperature")
        kappas.append(float(stats["inv_tau_eff"].mean()))
        lams.append(float(stats["lambda"].mean()))
        anchors += int(stats["inv_tau_eff"].numel())
    if not kappas:
        raise ValueError(f"{len(sentences)} sentences: not one batch of {training.batch_size}")
    kappa = float(np.mean(kappas))
    return {"inv_tau_eff_mean": kappa, "tau_eff": 1.0 / kappa, "lambda_mean": float(np.mean(lams)),
            "anchors": float(anchors), "batches": float(len(kappas))}
