"""Re-derive the ``tau_scale`` of the text study's InfoNCE temperature control for an encoder.

The control (``losses.simcse_infonce_tc``) runs InfoNCE at ``tau_scale`` × the schedule's τ: the
InfoNCE temperature whose logit slope between an anchor's positive and its hardest negatives is
WEINCE's at the start of training (WEINCE Eq. 3.2: κ_i, the anchor's effective inverse
temperature). If WEINCE's gain were only a softer temperature, the control would share it. It is
set before any run, on the runs' own first batches — each seed's order and dropout masks, the
encoder in train mode, no update:

    python -m infonce_lab.devtools.tau_scale --dataset gensim_lee --encoder minilm \\
        --loss simcse_weince --schedule simcse_t005 --seeds 1 --seeds 2

It reads params.yaml and the tokenised corpus (``dvc repro tokenize_text@<dataset>-<encoder>``)
and prints κ̄, τ_c = 1/κ̄, λ̄ per seed and over the seeds, and τ_c / τ, the value for
``tau_scale``. Changing the encoder or the WEINCE loss means running it again.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import typer
from torch import nn

from infonce_lab.losses.objects import Loss
from infonce_lab.train.loop import BatchSource
from infonce_lab.train.runtime import seed_everything

app = typer.Typer(add_completion=False)


@torch.no_grad()
def effective_temperature_at_start(source: BatchSource, encoder: nn.Module, loss_fn: Loss,
                                   tau: float, *, batch_size: int, seed: int,
                                   threads: int | None, batches: int) -> dict[str, float]:
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


@app.command(help=__doc__.split("\n\n")[0])
def main(dataset: str = typer.Option(..., help="a name under text.datasets"),
         encoder: str = typer.Option(..., help="a name under text.encoders"),
         loss: str = typer.Option(..., help="the WEINCE loss the control matches (losses:)"),
         schedule: str = typer.Option(..., help="the schedule both run at (schedules:)"),
         seeds: list[int] = typer.Option(..., help="the runs' seeds"),
         batches: int = typer.Option(5, help="first batches per seed"),
         params_file: Path = typer.Option(Path("params.yaml"), "--params")) -> None:
    from infonce_lab.models.text import build_sentence_encoder, load_tokenizer
    from infonce_lab.params import load_params
    from infonce_lab.pipeline.registry import build_loss, build_schedule
    from infonce_lab.pipeline.text_tokens import tokens_for
    from infonce_lab.train.text_source import SentencePairs

    params = load_params(params_file)
    for option, name, section in (("--dataset", dataset, params.text.datasets),
                                  ("--encoder", encoder, params.text.encoders),
                                  ("--loss", loss, params.losses),
                                  ("--schedule", schedule, params.schedules)):
        if name not in section:
            raise typer.BadParameter(f"{name!r} is not defined in {params_file} "
                                     f"({', '.join(section)})", param_hint=option)
    enc_cfg, training = params.text.encoders[encoder], params.text.training
    tokens, tokenizer = tokens_for(params, dataset, encoder), load_tokenizer(enc_cfg)
    tau = build_schedule(params.schedules[schedule], 1).tau(0)
    rows = []
    for seed in seeds:
        out = effective_temperature_at_start(
            SentencePairs(tokens, tokenizer, torch.device("cpu"), seed),
            build_sentence_encoder(enc_cfg, seed), build_loss(params.losses[loss]), tau,
            batch_size=training.batch_size, seed=seed, threads=training.threads,
            batches=batches)
        rows.append(out)
        print(f"seed {seed}: κ̄ = {out['inv_tau_eff_mean']:.2f}, τ_c = {out['tau_eff']:.4f}, "
              f"λ̄ = {out['lambda_mean']:.2f} ({out['anchors']:.0f} anchors)")
    kappa = float(np.mean([r["inv_tau_eff_mean"] for r in rows]))
    print(f"over the seeds: κ̄ = {kappa:.2f}, τ_c = {1 / kappa:.4f}, "
          f"λ̄ = {np.mean([r['lambda_mean'] for r in rows]):.2f}; τ = {tau:g}: "
          f"tau_scale = {1 / kappa / tau:.2f}")


if __name__ == "__main__":
    app()
