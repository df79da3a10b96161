"""diagnose: the tail diagnostics of SPECS B for one run, at every kept checkpoint and at the
final weights, into reports/tails/<run>.json (scalars, per epoch) and
reports/tails/plots/<run>.json (the data behind the report's figures)."""

from __future__ import annotations

import re
from pathlib import Path

import torch
import typer

from infonce_lab.cli import fail, params_or_exit, stage
from infonce_lab.data import load_raw
from infonce_lab.data.views import as_float, augment_one
from infonce_lab.io import write_json_atomic
from infonce_lab.models.checkpoint import load_encoder
from infonce_lab.tails.diagnose import diagnose_encoder

app = typer.Typer(add_completion=False)


def checkpoints(model_dir: Path) -> list[Path]:
    """The kept intermediate checkpoints in epoch order, then the final weights."""
    final = model_dir / "model.pt"
    if not final.is_file():
        raise FileNotFoundError(f"{final}: no trained model; run the pretrain stage for this run")
    kept = sorted(model_dir.glob("checkpoints/epoch_*.pt"),
                  key=lambda p: int(re.findall(r"\d+", p.stem)[0]))
    return [*kept, final]


@app.command()
@stage
def main(run: str = typer.Option(..., help="run id, <dataset>-<backbone>-<loss>-<schedule>-<seed>"),
         dataset: str = typer.Option(...)) -> None:
    params = params_or_exit()
    cfg = params.tails
    torch.set_num_threads(params.training.threads)
    data = load_raw(Path("data/raw") / dataset)
    n = len(data.train_x)
    for key, size in (("tails.bank.batch_images", cfg.bank.batch_images),
                      ("tails.pot.batch_images", cfg.pot.batch_images)):
        if size > n:
            fail(f"{key} = {size}: at most the {n} training images of dataset '{dataset}'")
    paths = checkpoints(Path("models") / run)
    images = as_float(torch.as_tensor(data.train_x))  # uint8 datasets: to [0, 1] once
    augment_cfg = params.datasets[dataset].augment

    def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return augment_one(x, augment_cfg, gen)

    head = 1 if cfg.bank.embedding == "z" else 0  # the encoder returns (h, z)
    metrics, plots = {}, {}
    for path in paths:
        encoder, meta = load_encoder(path)
        key = f"epoch_{int(meta['epoch'])}"
        metrics[key], plots[key] = diagnose_encoder(lambda x, e=encoder: e(x)[head], images,
                                                    augment, cfg)
        m = metrics[key]
        first = cfg.link.placements[0]
        print(f"{run} {key}: xi {m['pot']['xi']:+.3f}, lambda({first}) "
              f"{m['link'][first]['lambda_hat']:.3f}, delta {m['link'][first]['delta_mean']:+.4f}")
    metrics["final_epoch"] = int(meta["epoch"])
    # Plots first: the metrics file is what DVC and the summary look for.
    write_json_atomic(Path("reports/tails/plots") / f"{run}.json", plots)
    write_json_atomic(Path("reports/tails") / f"{run}.json", metrics)


if __name__ == "__main__":
    app()
