"""tokenize_text: one text corpus's training sentences tokenised once by one encoder's tokenizer.

Writes data/tokens/text/<dataset>/<encoder>/ (a Hugging Face ``datasets`` folder and a checksum
manifest), which text_pretrain reads for every run of that dataset and encoder.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.stage import params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a name under 'text.datasets:' in params.yaml"),
         encoder: str | None = typer.Option(None, metavar="NAME", help="a name under 'text.encoders:'")) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.text_tokens import tokenize_text

    names = stage_instance(dataset=dataset, encoder=encoder)
    print(json.dumps(tokenize_text(params, names["dataset"], names["encoder"])))


if __name__ == "__main__":
    app()
