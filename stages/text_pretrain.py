"""text_pretrain: unsupervised SimCSE for one text run (dataset × encoder × loss × schedule × seed).

Writes models/text/<dataset>/<run>/ (model.safetensors + meta.json, checkpoints/step_XXXXX/) and DVCLive
telemetry under reports/text/train/<run>/. Outputs are replaced only when training has finished.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.config import TextRun
from infonce_lab.io import atomic_dir, write_json_atomic
from infonce_lab.pipeline import paths

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str = typer.Option(...), encoder: str = typer.Option(...),
         loss: str = typer.Option(...), schedule: str = typer.Option(...),
         seed: int = typer.Option(...)) -> None:
    params = params_or_exit()
    run = TextRun(dataset=dataset, encoder=encoder, loss=loss, schedule=schedule, seed=seed)
    if run not in params.text_runs():
        raise ValueError(f"text run {run.id} is not part of text.study in params.yaml")
    from infonce_lab.data.text import load_text_raw
    from infonce_lab.evaluation.text import sts_spearman
    from infonce_lab.models.text import (
        build_sentence_encoder,
        encode,
        load_tokenizer,
        save_sentence_encoder,
        use_offline_hub_if_local,
    )
    from infonce_lab.text_training import total_steps, train_sentence_encoder

    use_offline_hub_if_local([params.text.encoders[encoder]])
    tcfg = params.text.training
    corpus = load_text_raw(paths.text_raw_dir(dataset))
    if total_steps(len(corpus.train), tcfg)[0] == 0:
        raise ValueError(f"text.training.batch_size = {tcfg.batch_size}: larger than the "
                         f"{len(corpus.train)} training sentences of text.datasets.{dataset}")
    if tcfg.eval_every_steps and corpus.sts_val is None:
        raise ValueError(f"text.training.eval_every_steps = {tcfg.eval_every_steps}: "
                         f"text.datasets.{dataset} has no validation set; use 0")
    enc_cfg = params.text.encoders[encoder]
    tokenizer = load_tokenizer(enc_cfg)
    model = build_sentence_encoder(enc_cfg, seed)
    validate = None
    if corpus.sts_val is not None and tcfg.eval_every_steps:
        val = corpus.sts_val

        def validate(m):  # noqa: ANN001, ANN202
            emb = encode(m, tokenizer, val.texts, max_length=params.text.evaluation.max_length,
                         batch_size=params.text.evaluation.batch_size,
                         device=next(m.parameters()).device)
            return sts_spearman(emb, val.pairs, val.scores)

    meta = {"run": run.model_dump(), "encoder": enc_cfg.model_dump(mode="json")}
    from dvclive import Live

    with atomic_dir(paths.text_model_dir(run)) as model_dir, \
            atomic_dir(Path("reports/text/train") / run.id) as live_dir:
        with Live(dir=str(live_dir), save_dvc_exp=False, dvcyaml=None, report=None) as live:
            def on_log(step: int, record: dict[str, float]) -> None:
                live.step = step
                for k, v in record.items():
                    live.log_metric(f"train/{k}", v)
                live.next_step()

            def on_checkpoint(step: int, m) -> None:  # noqa: ANN001
                save_sentence_encoder(m, model_dir / "checkpoints" / f"step_{step:05d}",
                                      {**meta, "step": step})

            result = train_sentence_encoder(
                corpus.train, encoder=model, tokenizer=tokenizer, loss=params.losses[loss],
                schedule=params.schedules[schedule], training=tcfg, seed=seed,
                validate=validate, on_log=on_log, on_checkpoint=on_checkpoint,
            )
        save_sentence_encoder(result.encoder, model_dir, {
            **meta, "step": result.selected_step, "steps": result.steps,
            "loss_state": result.loss_state, "train_stats": result.train_stats})
        write_json_atomic(live_dir / "run.json", {
            "run": run.model_dump(), "steps": result.steps, "selected_step": result.selected_step,
            "final_loss": result.final_loss, "train_seconds": round(result.seconds, 2),
            "samples_per_s": round(result.samples_per_s, 1),
            "val_spearman": [[s, v] for s, v in result.val_history],
            "n_train_sentences": len(corpus.train),
            "train_stats": result.train_stats,
            "device": str(next(result.encoder.parameters()).device),
            "torch_threads": torch.get_num_threads(),
        })
    print(json.dumps({"run": run.id, "final_loss": result.final_loss, "steps": result.steps,
                      "train_seconds": round(result.seconds, 1)}))


if __name__ == "__main__":
    app()
