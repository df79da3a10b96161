"""extract: frozen backbone features h and projector outputs z for the train and test sets."""

from __future__ import annotations

from pathlib import Path

import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.data import load_raw
from infonce_lab.features import augmented_view_pairs, save_features
from infonce_lab.io import atomic_dir
from infonce_lab.models.checkpoint import load_encoder
from infonce_lab.runtime import resolve_device
from infonce_lab.training import extract_features

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(run: str = typer.Option(..., help="run id, <dataset>-<backbone>-<loss>-<schedule>-<seed>"),
         dataset: str = typer.Option(...)) -> None:
    params = params_or_exit()
    torch.set_num_threads(params.training.threads)
    device = resolve_device(params.training.device)
    data = load_raw(Path("data/raw") / dataset)
    encoder, _ = load_encoder(Path("models") / run / "model.pt", map_location=device)
    with atomic_dir(Path("data/features") / run) as out:
        for split, x, y in (("train", data.train_x, data.train_y), ("test", data.test_x, data.test_y)):
            h, z = extract_features(encoder, x, params.evaluation.batch_size, device)
            save_features(out, split, h, z, y)
        # Two augmented views of each test image: the positive pairs for alignment.
        v1, v2 = augmented_view_pairs(data.test_x, params.datasets[dataset].augment,
                                      params.evaluation.view_seed)
        h1, _ = extract_features(encoder, v1, params.evaluation.batch_size, device)
        h2, _ = extract_features(encoder, v2, params.evaluation.batch_size, device)
        save_features(out, "test_view1", h1, None, data.test_y)
        save_features(out, "test_view2", h2, None, data.test_y)
    print(f"{run}: features h {h.shape[1]}-d, z {z.shape[1]}-d")


if __name__ == "__main__":
    app()
