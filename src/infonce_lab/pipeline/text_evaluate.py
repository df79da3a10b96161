"""The text_evaluate stage for one text dataset: every text run of the study, then the baselines.

Each run's encoder (eval mode, no MLP unless ``mlp: always``) embeds the evaluation texts into
``text_features_dir(dataset)/<run>/features.npz``; STS Spearman, the polarity probe and kNN,
alignment and uniformity go to ``text_run_metrics_dir(dataset)/<run>.json``, with the run's training statistics
from the model's meta under ``train`` (WEINCE: λ̄ and its effective inverse temperature κ̄).
The baselines (TF-IDF and each untuned encoder) go through the same protocol into
``text_baseline_metrics(dataset)``; the tail diagnostics of the encoders of ``text.tails`` as
they ship go to ``text_tails(dataset)`` ({} when it lists none).

One process for the dataset: a run's evaluation takes ≈ 9 s against ≈ 8 s of process start and
DVC bookkeeping per stage (reports/timings/); the encoders' imports are paid once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from infonce_lab.io import replaced_together, save_npz_atomic
from infonce_lab.params import Params
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.binding import check_binding, model_binding
from infonce_lab.pipeline.study import dataset_text_runs
from infonce_lab.pipeline.text_tails import text_tails


def evaluate_text_dataset(params: Params, dataset: str) -> None:
    from infonce_lab.data.text import load_text_raw
    from infonce_lab.models.text import (
        build_sentence_encoder,
        load_sentence_encoder,
        load_tokenizer,
        use_offline_hub_if_local,
    )
    from infonce_lab.pipeline.protocol import check_evaluation
    from infonce_lab.pipeline.text_protocol import (
        embed_corpus,
        evaluate_text,
        labelled_split,
        tfidf_embeddings,
    )

    study = params.text.study
    runs = dataset_text_runs(params, dataset)
    torch.set_num_threads(params.text.training.threads)
    use_offline_hub_if_local([params.text.encoders[n]
                              for n in [*study.encoders, *params.text.tails.encoders]])
    corpus = load_text_raw(paths.text_raw_dir(dataset))
    tails_b = params.text.tails.batch_size
    if params.text.tails.encoders and tails_b > len(corpus.train):  # before any encoder runs
        raise ValueError(f"text.tails.batch_size = {tails_b}: at most the {len(corpus.train)} "
                         f"training sentences of text.datasets.{dataset}")
    ecfg = params.text.evaluation
    if ecfg.polarity and corpus.labelled is not None:
        check_evaluation(corpus.labelled.labels[labelled_split(corpus.labelled.labels, ecfg)[0]],
                         params.evaluation)
    for run in runs:
        if not (paths.text_model_dir(run) / "meta.json").is_file():
            raise FileNotFoundError(f"{paths.text_model_dir(run)}: no trained model; run the "
                                    f"text_pretrain stage for {run.id}")

    def evaluate(emb: dict) -> dict:
        return evaluate_text(corpus.sts_test, emb["sts_test"], ecfg, params.evaluation,
                             sts_val=corpus.sts_val, emb_val=emb.get("sts_val"),
                             labelled=corpus.labelled, emb_labelled=emb.get("labelled"))

    records: dict[str, dict[str, Any]] = {}
    with replaced_together() as outputs:
        feats = outputs.dir(paths.text_features_dir(dataset))
        for run in runs:
            model, tokenizer, meta = load_sentence_encoder(paths.text_model_dir(run))
            check_binding(paths.text_model_dir(run) / "meta.json", meta, model_binding(params, run))
            emb = embed_corpus(model, tokenizer, corpus, ecfg)
            metrics = evaluate(emb)
            save_npz_atomic(feats / run.id / "features.npz",
                            **{k: np.asarray(v) for k, v in emb.items()})
            record = {"encoder": {"kind": "trained", **run.model_dump(), "step": meta.get("step")},
                      **metrics}
            if meta.get("train_stats"):
                record["train"] = dict(meta["train_stats"])
            records[run.id] = record
            print(f"{run.id}: STS Spearman {metrics['sts']['test_spearman']:.2f}"
                  + (f", polarity probe {metrics['linear']['test_acc']:.3f}"
                     if "linear" in metrics else ""))
        baselines: dict[str, dict[str, Any]] = {}
        if "tfidf" in study.baselines:
            baselines["tfidf"] = {"encoder": {"kind": "tfidf", "dataset": dataset},
                                  **evaluate(tfidf_embeddings(corpus, ecfg))}
        if "untuned" in study.baselines:
            for name in study.encoders:
                cfg = params.text.encoders[name]
                # The evaluation embedding h never passes through the (randomly initialised) MLP
                # unless mlp is 'always'; the first study seed fixes that MLP then.
                model = build_sentence_encoder(cfg, study.seeds[0] if study.seeds else 0).eval()
                emb = embed_corpus(model, load_tokenizer(cfg), corpus, ecfg)
                baselines[f"untuned-{name}"] = {
                    "encoder": {"kind": "untuned", "dataset": dataset, "encoder": name},
                    **evaluate(emb)}
        outputs.json(paths.text_tails(dataset), text_tails(params, corpus.train, dataset))
        outputs.json_dir(paths.text_run_metrics_dir(dataset), records)
        outputs.json(paths.text_baseline_metrics(dataset), baselines)
    for name, m in baselines.items():
        print(f"{dataset}/{name}: STS Spearman {m['sts']['test_spearman']:.2f}")
