"""The text_pretrain stage: unsupervised SimCSE for every seed of one text configuration, on the
corpus tokenised by the tokenize_text stage, through the same training loop → ``models/text/<dataset>/<configuration>/<run>/`` (model.safetensors +
meta.json, checkpoints/step_XXXXX/) and DVCLive telemetry under
``reports/text/train/<configuration>/<run>/``, replaced only when every seed has finished;
resumable after a kill like the image runs (``pipeline/training_run.py``).
"""

from __future__ import annotations

import shutil
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from infonce_lab.io import atomic_dir, write_json_atomic
from infonce_lab.params import (
    MAX_RUN_STEPS,
    Configuration,
    LossConfig,
    Params,
    ScheduleConfig,
    TextRun,
    TextTrainingConfig,
    schedule_range_problem,
)
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.binding import model_binding
from infonce_lab.pipeline.registry import build_schedule
from infonce_lab.pipeline.text_tokens import tokens_for
from infonce_lab.pipeline.training_run import (
    FINISHED,
    finished_line,
    init_distributed,
    live_logger,
    loss_on,
    resume_fingerprint,
    resume_for,
    summary,
    sweep_abandoned,
    train_configuration,
)
from infonce_lab.train.loop import CheckpointFn, LogFn, Plan, Resume, TrainResult, ValidateFn, fit
from infonce_lab.train.optim import build_optimizer
from infonce_lab.train.progress import Progress
from infonce_lab.train.runtime import is_rank0, resolve_device

if TYPE_CHECKING:
    from datasets import Dataset

    from infonce_lab.data.text import TextCorpus


def text_steps(n_sentences: int, batch_size: int, epochs: int, max_steps: int | None
               ) -> tuple[int, int]:
    """(steps per epoch, total steps): full batches only (drop_last), capped by max_steps."""
    per_epoch = n_sentences // batch_size
    total = per_epoch * epochs
    return per_epoch, total if max_steps is None else min(total, max_steps)


def train_text(tokens: Dataset, *, encoder: torch.nn.Module, tokenizer: Any,
               loss: LossConfig, schedule: ScheduleConfig, training: TextTrainingConfig,
               seed: int, validate: ValidateFn | None = None, on_log: LogFn | None = None,
               on_checkpoint: CheckpointFn | None = None, resume: Resume | None = None,
               progress: Progress | None = None) -> TrainResult:
    """One SimCSE run from its params sections on the tokenised corpus
    (``data.text_tokens.tokenise_sentences``, at ``training.max_length``): ``encoder`` as built
    (seeded) by the caller."""
    from infonce_lab.train.text_source import SentencePairs

    t = training
    spe, total = text_steps(len(tokens), t.batch_size, t.epochs, t.max_steps)
    if spe == 0:
        raise ValueError(f"text.training.batch_size = {t.batch_size} exceeds the "
                         f"{len(tokens)} training sentences")
    device = resolve_device(t.device)
    encoder = encoder.to(device)
    loss_fn, learned = loss_on(loss, device)
    # The fused kernel is the same update as the per-tensor loop in one pass over all parameters
    # (equal to float rounding): ≈ 0.04 instead of ≈ 0.25 CPU-s per MiniLM step (≈ 3% of it).
    optimizer = build_optimizer(t.optimizer, encoder, t.lr, t.weight_decay, extra=learned,
                                fused=device.type in ("cpu", "cuda"))
    plan = Plan(total_steps=total, steps_per_epoch=spe, batch_size=t.batch_size, lr=t.lr,
                lr_schedule=t.lr_schedule, warmup_steps=t.warmup_steps,
                log_every_steps=t.log_every_steps, checkpoint_steps=frozenset(t.checkpoint_steps),
                eval_every_steps=t.eval_every_steps, select_best=t.selection == "best_val",
                max_grad_norm=t.max_grad_norm, bf16=True, threads=t.threads,
                find_unused_parameters=True,
                advice="lower text.training.lr or raise the temperature")
    return fit(SentencePairs(tokens, tokenizer, device, seed), encoder, loss_fn,
               build_schedule(schedule, spe), optimizer, plan, device=device, seed=seed,
               validate=validate, on_log=on_log, on_checkpoint=on_checkpoint, resume=resume,
               progress=progress)


def check_text_steps(params: Params, runs: list[TextRun], spe: int, total: int, sentences: int,
                     dataset: str) -> None:
    """What the validator cannot check before a corpus is read: a run's length, and every
    step's τ on it (the validator checks τ over ``max_steps`` when that is set)."""
    if total > MAX_RUN_STEPS:
        raise ValueError(f"text.training.epochs = {params.text.training.epochs}: at most "
                         f"{MAX_RUN_STEPS // spe:,} at the {spe:,} steps per epoch of "
                         f"text.datasets.{dataset} (runs of at most {MAX_RUN_STEPS:,} steps; "
                         "or set text.training.max_steps)")
    for name in sorted({r.schedule for r in runs}):
        if problem := schedule_range_problem(params.schedules[name], spe, total):
            raise ValueError(f"schedules.{name}: {problem} (a run of {total} steps over the "
                             f"{sentences} sentences of text.datasets.{dataset})")


def text_pretrain(params: Params, config: Configuration) -> list[dict[str, Any]]:
    """Unsupervised SimCSE for every seed of one text configuration; returns the stage's lines."""
    from infonce_lab.data.text import load_text_raw

    runs = [r for r in params.text_runs() if r.config == config]
    if not runs:
        raise ValueError(f"text configuration {config.to_str()} is not part of text.study in "
                         "params.yaml")
    tcfg = params.text.training
    corpus = load_text_raw(paths.text_raw_dir(config.dataset))
    spe, total = text_steps(len(corpus.train), tcfg.batch_size, tcfg.epochs, tcfg.max_steps)
    if spe == 0:
        raise ValueError(f"text.training.batch_size = {tcfg.batch_size}: larger than the "
                         f"{len(corpus.train)} training sentences of "
                         f"text.datasets.{config.dataset}")
    check_text_steps(params, runs, spe, total, len(corpus.train), config.dataset)
    tokens = tokens_for(params, config.dataset, config.model)
    if tcfg.eval_every_steps and corpus.sts_val is None:
        raise ValueError(f"text.training.eval_every_steps = {tcfg.eval_every_steps}: "
                         f"text.datasets.{config.dataset} has no validation set; use 0")
    sweep_abandoned({r.id for r in params.runs()} | {r.id for r in params.text_runs()})
    return train_configuration(runs, partial(text_pretrain_run, params, corpus, tokens),
                               paths.configuration_model_dir(config, text=True),
                               paths.TEXT_TRAIN / config.to_str())


def text_pretrain_run(params: Params, corpus: TextCorpus, tokens: Dataset, run: TextRun
                      ) -> dict[str, Any]:
    """One text run on ``tokens`` (``corpus.train`` tokenised) into ``.resume/<run>/finished/``;
    returns the line the stage prints."""
    from infonce_lab.evaluation.text import sts_spearman
    from infonce_lab.models.text import (
        build_sentence_encoder,
        encode,
        load_tokenizer,
        save_sentence_encoder,
        use_offline_hub_if_local,
    )

    enc_cfg, tcfg = params.text.encoders[run.encoder], params.text.training
    use_offline_hub_if_local([enc_cfg])
    fp = resume_fingerprint(params, run)
    init_distributed()
    work, resume = resume_for(run.id, fp, tcfg.checkpoint_every_steps)
    if (line := finished_line(work)) is not None:
        return line if is_rank0() else {}
    tokenizer = load_tokenizer(enc_cfg)
    validate = None
    if corpus.sts_val is not None and tcfg.eval_every_steps:
        val, ecfg = corpus.sts_val, params.text.evaluation

        def validate(m: torch.nn.Module) -> float:
            emb = encode(m, tokenizer, val.texts, max_length=ecfg.max_length,
                         batch_size=ecfg.batch_size, device=next(m.parameters()).device)
            return sts_spearman(emb, val.pairs, val.scores)

    train = partial(train_text, tokens, encoder=build_sentence_encoder(enc_cfg, run.seed),
                    tokenizer=tokenizer, loss=params.losses[run.loss],
                    schedule=params.schedules[run.schedule], training=tcfg, seed=run.seed,
                    validate=validate, resume=resume, progress=Progress(run.id))
    if not is_rank0():
        train()
        return {}
    meta = {**model_binding(params, run), "encoder": enc_cfg.model_dump(mode="json")}
    ckpt_dir = work / "checkpoints"

    def on_checkpoint(step: int, m: torch.nn.Module) -> None:
        save_sentence_encoder(m, ckpt_dir / f"step_{step:05d}", {**meta, "step": step},
                              tokenizer, params.text.evaluation.max_length)

    with atomic_dir(work / FINISHED) as done:
        model_dir, live_dir = done / "model", done / "train"
        with live_logger(live_dir, run.id) as on_log:
            result = train(on_log=on_log, on_checkpoint=on_checkpoint)
        save_sentence_encoder(result.encoder, model_dir, {  # replaces model_dir: first
            **meta, "step": result.selected_step, "steps": result.steps,
            "loss_state": result.loss_state, "train_stats": result.train_stats},
            tokenizer, params.text.evaluation.max_length)
        if ckpt_dir.is_dir():
            shutil.copytree(ckpt_dir, model_dir / "checkpoints")
        write_json_atomic(live_dir / "run.json", {
            "run": run.model_dump(), **summary(result), "selected_step": result.selected_step,
            "val_spearman": [[s, v] for s, v in result.val_history],
            "n_train_sentences": len(corpus.train), "train_stats": result.train_stats})
        line = {"run": run.id, "final_loss": result.final_loss, "steps": result.steps,
                "train_seconds": round(result.seconds, 1)}
        write_json_atomic(done / "line.json", line)
    return line
