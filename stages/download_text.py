"""download_text: materialise a text corpus under data/raw/text/<dataset>/ with a checksum manifest.

The offline default reads gensim's shipped test data from the installed package; the SimCSE
corpus (Wikipedia-1M + STS-B) is downloaded into data/downloads/text/ (kept between runs, so a
file placed there by hand is used without the network).
"""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.stage import fail, params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a name under 'text.datasets:' in params.yaml"),
         out: Path = typer.Option(Path("data/raw/text"), help="parent folder of the corpus"),
         downloads: Path = typer.Option(Path("data/downloads/text"),
                                        help="where downloaded archives are kept")) -> None:
    params = params_or_exit()
    dataset = stage_instance(dataset=dataset)["dataset"]
    if dataset not in params.text.datasets:
        fail(f"--dataset {dataset!r}: not defined under 'text.datasets:' "
             f"({', '.join(params.text.datasets) or 'none'})")
    from infonce_lab.data.text import materialise_text, read_text_corpus

    cfg = params.text.datasets[dataset]
    corpus = read_text_corpus(cfg, downloads, f"text.datasets.{dataset}")
    manifest = materialise_text(corpus, out / dataset, extra={"params": cfg.model_dump(mode="json")})
    counts = manifest["counts"]
    print(f"{dataset}: {counts['n_train']} training sentences, "
          f"{counts['n_sts_test_pairs']} test pairs -> {out / dataset}")


if __name__ == "__main__":
    app()
