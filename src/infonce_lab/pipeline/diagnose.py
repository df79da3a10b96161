"""The diagnose stage for one image dataset: the tail diagnostics (the WEINCE paper's §3–4:
peaks over threshold, the softmax-vs-Weibull link test, its ablations, gradient allocation, and
the repulsion share of Wang & Isola §5) of every run, at every kept checkpoint and at the final
weights. Per run, ``tails_metrics(run)`` holds the scalars per epoch and ``tails_plots(run)`` the
data behind the report's figures.

One process for the dataset: on digits a run's diagnostics take ≈ 15 s against ≈ 7 s of process
start and DVC bookkeeping per stage (reports/timings/), so a stage per run spent a third of its
wall time on fixed cost. Outputs are replaced as whole folders once every run is done.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from infonce_lab.config import Params
from infonce_lab.data import load_raw
from infonce_lab.data.views import as_float, augment_one
from infonce_lab.io import write_json_dir
from infonce_lab.models.checkpoint import load_encoder
from infonce_lab.pipeline import paths
from infonce_lab.tails.diagnose import diagnose_encoder


def checkpoints(model_dir: Path) -> list[Path]:
    """The kept intermediate checkpoints in epoch order, then the final weights."""
    final = model_dir / "model.pt"
    if not final.is_file():
        raise FileNotFoundError(f"{final}: no trained model; run the pretrain stage for this run")
    kept = sorted(model_dir.glob("checkpoints/epoch_*.pt"),
                  key=lambda p: int(re.findall(r"\d+", p.stem)[0]))
    return [*kept, final]


def diagnose_dataset(params: Params, dataset: str) -> None:
    if dataset not in params.study.datasets:
        raise ValueError(f"dataset {dataset!r} is not in study.datasets {params.study.datasets}")
    cfg = params.tails
    torch.set_num_threads(params.training.threads)
    data = load_raw(paths.raw_dir(dataset))
    n = len(data.train_x)
    for key, size in (("tails.bank.batch_images", cfg.bank.batch_images),
                      ("tails.pot.batch_images", cfg.pot.batch_images)):
        if size > n:
            raise ValueError(f"{key} = {size}: at most the {n} training images of dataset "
                             f"'{dataset}'")
    runs = [r for r in params.runs() if r.dataset == dataset]
    kept = {r.id: checkpoints(paths.model_dir(r)) for r in runs}  # all there before any work
    images = as_float(torch.as_tensor(data.train_x))  # uint8 datasets: to [0, 1] once
    augment_cfg = params.datasets[dataset].augment

    def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return augment_one(x, augment_cfg, gen)

    head = 1 if cfg.bank.embedding == "z" else 0  # the encoder returns (h, z)
    first = cfg.link.placements[0]
    results: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for run in runs:
        metrics: dict[str, Any] = {}
        plots: dict[str, Any] = {}
        for path in kept[run.id]:
            encoder, meta = load_encoder(path)
            key = f"epoch_{int(meta['epoch'])}"
            metrics[key], plots[key] = diagnose_encoder(lambda x, e=encoder: e(x)[head], images,
                                                        augment, cfg)
            m = metrics[key]
            print(f"{run.id} {key}: xi {m['pot']['xi']:+.3f}, lambda({first}) "
                  f"{m['link'][first]['lambda_hat']:.3f}, delta "
                  f"{m['link'][first]['delta_mean']:+.4f}")
        metrics["final_epoch"] = int(meta["epoch"])
        results[run.id] = (metrics, plots)
    # Plots first: the metrics are what DVC and the summary look for.
    write_json_dir(paths.tails_plots_dir(dataset), {k: v[1] for k, v in results.items()})
    write_json_dir(paths.tails_metrics_dir(dataset), {k: v[0] for k, v in results.items()})
