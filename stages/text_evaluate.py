"""text_evaluate: STS Spearman, polarity probe and kNN, alignment and uniformity of one text run.

Embeds the evaluation texts with the trained encoder (eval mode, no MLP unless ``mlp: always``)
into data/features/text/<run>/features.npz and writes reports/metrics/text/runs/<run>.json, with
the run's training statistics from the model's meta under ``train`` (WEINCE: λ̄ and its effective
inverse temperature κ̄ over every step).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.io import atomic_dir, save_npz_atomic, write_json_atomic

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(run: str = typer.Option(...), dataset: str = typer.Option(...),
         encoder: str = typer.Option(...), loss: str = typer.Option(...),
         schedule: str = typer.Option(...), seed: int = typer.Option(...)) -> None:
    params = params_or_exit()
    torch.set_num_threads(params.text.training.threads)
    from infonce_lab.data.text import load_text_raw
    from infonce_lab.evaluation.protocol import check_knn_k
    from infonce_lab.evaluation.text import embed_corpus, evaluate_text, labelled_split
    from infonce_lab.models.text import load_sentence_encoder, use_offline_hub_if_local

    use_offline_hub_if_local([params.text.encoders[encoder]])
    corpus = load_text_raw(Path("data/raw/text") / dataset)
    ecfg = params.text.evaluation
    if ecfg.polarity and corpus.labelled is not None:
        check_knn_k(corpus.labelled.labels[labelled_split(corpus.labelled.labels, ecfg)[0]],
                    params.evaluation)
    model, tokenizer, meta = load_sentence_encoder(Path("models/text") / run)
    emb = embed_corpus(model, tokenizer, corpus, ecfg)
    metrics = evaluate_text(corpus.sts_test, emb["sts_test"], ecfg, params.evaluation,
                            sts_val=corpus.sts_val, emb_val=emb.get("sts_val"),
                            labelled=corpus.labelled, emb_labelled=emb.get("labelled"))
    with atomic_dir(Path("data/features/text") / run) as out:
        save_npz_atomic(out / "features.npz", **{k: np.asarray(v) for k, v in emb.items()})
    record = {"encoder": {"kind": "trained", "dataset": dataset, "encoder": encoder, "loss": loss,
                          "schedule": schedule, "seed": seed, "step": meta.get("step")},
              **metrics}
    if meta.get("train_stats"):
        record["train"] = dict(meta["train_stats"])
    write_json_atomic(Path("reports/metrics/text/runs") / f"{run}.json", record)
    print(f"{run}: STS Spearman {metrics['sts']['test_spearman']:.2f}"
          + (f", polarity probe {metrics['linear']['test_acc']:.3f}" if "linear" in metrics else ""))


if __name__ == "__main__":
    app()
