"""text_baselines: TF-IDF and each untuned encoder, evaluated exactly as the trained text runs,
into reports/metrics/text/baselines/<dataset>.json."""

from __future__ import annotations

from pathlib import Path

import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.io import write_json_atomic

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str = typer.Option(...)) -> None:
    params = params_or_exit()
    torch.set_num_threads(params.text.training.threads)
    from infonce_lab.data.text import load_text_raw
    from infonce_lab.evaluation.protocol import check_knn_k
    from infonce_lab.evaluation.text import (
        embed_corpus,
        evaluate_text,
        labelled_split,
        tfidf_embeddings,
    )
    from infonce_lab.models.text import (
        build_sentence_encoder,
        load_tokenizer,
        use_offline_hub_if_local,
    )

    if "untuned" in params.text.study.baselines:
        use_offline_hub_if_local([params.text.encoders[n] for n in params.text.study.encoders])
    corpus = load_text_raw(Path("data/raw/text") / dataset)
    ecfg = params.text.evaluation
    if ecfg.polarity and corpus.labelled is not None:
        check_knn_k(corpus.labelled.labels[labelled_split(corpus.labelled.labels, ecfg)[0]],
                    params.evaluation)
    study = params.text.study
    out: dict[str, dict] = {}

    def evaluate(emb: dict) -> dict:
        return evaluate_text(corpus.sts_test, emb["sts_test"], ecfg, params.evaluation,
                             sts_val=corpus.sts_val, emb_val=emb.get("sts_val"),
                             labelled=corpus.labelled, emb_labelled=emb.get("labelled"))

    if "tfidf" in study.baselines:
        out["tfidf"] = {"encoder": {"kind": "tfidf", "dataset": dataset},
                        **evaluate(tfidf_embeddings(corpus, ecfg))}
    if "untuned" in study.baselines:
        for name in study.encoders:
            cfg = params.text.encoders[name]
            # The evaluation embedding h never passes through the (randomly initialised) MLP
            # unless mlp is 'always'; the first study seed fixes that MLP then.
            model = build_sentence_encoder(cfg, study.seeds[0] if study.seeds else 0).eval()
            emb = embed_corpus(model, load_tokenizer(cfg), corpus, ecfg)
            out[f"untuned-{name}"] = {"encoder": {"kind": "untuned", "dataset": dataset,
                                                  "encoder": name}, **evaluate(emb)}
    write_json_atomic(Path("reports/metrics/text/baselines") / f"{dataset}.json", out)
    for name, m in out.items():
        print(f"{dataset}/{name}: STS Spearman {m['sts']['test_spearman']:.2f}")


if __name__ == "__main__":
    app()
