"""Feature extraction, the step between pretrain and the two readers (evaluate, diagnose): every
encoder is run once, and only here.

For each run of a dataset, into ``features_dir(dataset)/<run>/``:

- from the final weights, h and z of the train and test sets and h of two augmented views of each
  test image (``train.npz``, ``test.npz``, ``test_view1.npz``, ``test_view2.npz``): what the
  evaluation protocol scores;
- for the runs the diagnose stage diagnoses (``Params.diagnosed_runs``), from every kept
  checkpoint and the final weights, the embeddings of the tail diagnostics' banks
  (``bank_epoch_XXXX.npz``): the link bank's 2B views per batch and the POT bank's first views,
  drawn from ``tails.seed`` and the run's seed so every configuration and checkpoint of a seed
  sees the same images and augmentations (WEINCE §2.3.1–2.3.2). The diagnose stage reads these
  and never touches an encoder.

It runs inside the evaluate stage rather than as a stage of its own: on digits a stage costs ≈ 7 s
of process start and DVC bookkeeping, the extraction of a dataset's runs about as much.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from infonce_lab.data.views import as_float, augment_one, make_views
from infonce_lab.io import reading, save_npz_atomic
from infonce_lab.models.build import extract_features, load_encoder, missing_model
from infonce_lab.params import AugmentConfig, Params, Run, TailsConfig
from infonce_lab.pipeline.binding import check_binding, model_binding
from infonce_lab.tails.banks import link_draws, pot_draws

Views = tuple[np.ndarray, np.ndarray]


@torch.no_grad()
def augmented_view_pairs(x: np.ndarray, augment: AugmentConfig, seed: int) -> Views:
    """Two augmented views of every image (the positive pairs that alignment is measured on)."""
    gen = torch.Generator().manual_seed(seed)
    v1, v2 = make_views(torch.as_tensor(x), augment, gen)
    return v1.numpy(), v2.numpy()


def checkpoints(model_dir: Path, epochs: list[int]) -> list[Path]:
    """The intermediate checkpoints of ``epochs`` (``training.checkpoint_epochs``) in epoch
    order, then the final weights; one that is missing is an error naming its epoch, not a
    silently shorter diagnosis."""
    final = model_dir / "model.pt"
    if not final.is_file():
        raise FileNotFoundError(missing_model(final))
    kept = [model_dir / "checkpoints" / f"epoch_{e:04d}.pt" for e in sorted(epochs)]
    for path, e in zip(kept, sorted(epochs), strict=True):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: the epoch-{e} checkpoint (training.checkpoint_epochs) is missing; "
                "restore it (`dvc checkout`) or re-train the run (`dvc repro -f pretrain@…`)")
    return [*kept, final]


def encode_splits(encoder: torch.nn.Module, data: Any, views: Views, bs: int,
                  device: str | torch.device = "cpu") -> dict[str, np.ndarray]:
    """h and z of the train and test sets and of the two test views — what the protocol scores
    (the probes read h; the geometry is measured on h and on z, where the losses act), trained
    runs and random-init baselines alike."""
    train_h, train_z = extract_features(encoder, data.train_x, bs, device)
    test_h, test_z = extract_features(encoder, data.test_x, bs, device)
    view1_h, view1_z = extract_features(encoder, views[0], bs, device)
    view2_h, view2_z = extract_features(encoder, views[1], bs, device)
    return {"train_h": train_h, "train_z": train_z, "test_h": test_h, "test_z": test_z,
            "view1_h": view1_h, "view2_h": view2_h, "view1_z": view1_z, "view2_z": view2_z}


def save_splits(out: Path, f: dict[str, np.ndarray], data: Any) -> None:
    for split, h, z, y in (("train", f["train_h"], f["train_z"], data.train_y),
                           ("test", f["test_h"], f["test_z"], data.test_y),
                           ("test_view1", f["view1_h"], None, data.test_y),
                           ("test_view2", f["view2_h"], None, data.test_y)):
        arrays = {"h": h.astype(np.float32), "y": y}
        if z is not None:
            arrays["z"] = z.astype(np.float32)
        save_npz_atomic(out / f"{split}.npz", **arrays)


def check_banks(cfg: TailsConfig, n_images: int, dataset: str) -> None:
    """The banks fit the dataset's training images, before any encoder is loaded."""
    for key, size in (("tails.bank.batch_images", cfg.bank.batch_images),
                      ("tails.pot.batch_images", cfg.pot.batch_images)):
        if size > n_images:
            raise ValueError(f"{key} = {size}: at most the {n_images} training images of "
                             f"dataset '{dataset}'")
    total = cfg.bank.batches * cfg.bank.batch_images
    if total > n_images:  # the link bank draws every image once (tails/banks.py: link_draws)
        raise ValueError(f"tails.bank.batches × tails.bank.batch_images = {cfg.bank.batches} × "
                         f"{cfg.bank.batch_images} = {total}: the link bank draws each image "
                         f"once, so at most the {n_images} training images of dataset "
                         f"'{dataset}' (fewer batches, or smaller ones)")


def bank_seed(tails_seed: int, run_seed: int) -> int:
    """The banks' draw of a run: one per (``tails.seed``, run seed), shared by every
    configuration and checkpoint of that seed (paired), independent across seeds."""
    return int(np.random.SeedSequence([tails_seed, run_seed]).generate_state(1)[0])


@torch.no_grad()
def bank_embeddings(encoder: torch.nn.Module, images: torch.Tensor, params: Params,
                    dataset: str, run_seed: int, device: str | torch.device = "cpu",
                    ) -> dict[str, np.ndarray]:
    """One checkpoint's bank embeddings (``tails.bank.embedding``: z or h), from one generator
    seeded by :func:`bank_seed`: the link bank's draws first, then the POT bank's."""
    cfg, aug = params.tails, params.datasets[dataset].augment
    head = 1 if cfg.bank.embedding == "z" else 0  # the encoder returns (h, z)
    encoder = encoder.to(device).eval()

    def embed(x: torch.Tensor) -> torch.Tensor:
        return encoder(x.to(device))[head].float().cpu()

    def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return augment_one(x, aug, gen)

    gen = torch.Generator().manual_seed(bank_seed(cfg.seed, run_seed))
    link_z, link_images = link_draws(embed, images, augment, cfg.bank.batches,
                                     cfg.bank.batch_images, gen)
    pot_z, pot_images = pot_draws(embed, images, augment, cfg.pot.repeats, cfg.pot.batch_images,
                                  gen)
    return {"link_z": link_z, "link_images": link_images, "pot_z": pot_z,
            "pot_images": pot_images}


def extract_run(model_dir: Path, out: Path, data: Any, views: Views, params: Params,
                run: Run, device: str | torch.device = "cpu",
                banks: bool = True) -> dict[str, np.ndarray]:
    """Every feature file of one run (its seed picks its banks' draw; ``banks``: whether it is
    diagnosed, so its checkpoints' banks are drawn); returns the final weights' split features.
    Each model read must be this run's, trained with these params (:func:`check_binding`)."""
    images = as_float(torch.as_tensor(data.train_x))  # uint8 datasets: to [0, 1] once
    f: dict[str, np.ndarray] = {}
    epochs = params.training.checkpoint_epochs if banks else []
    expected = model_binding(params, run)
    dataset, run_seed = run.dataset, run.seed
    for path in checkpoints(model_dir, epochs):
        encoder, meta = load_encoder(path, map_location=device)
        check_binding(path, meta, expected)
        if banks:
            save_npz_atomic(out / f"bank_epoch_{int(meta['epoch']):04d}.npz",
                            **bank_embeddings(encoder, images, params, dataset, run_seed, device))
        if path.name == "model.pt":
            f = encode_splits(encoder, data, views, params.evaluation.batch_size, device)
            save_splits(out, f, data)
    return f


def load_banks(run_features: Path, epochs: list[int]) -> list[tuple[int, dict[str, np.ndarray]]]:
    """A run's bank embeddings at ``epochs`` (``training.checkpoint_epochs`` and the last),
    (epoch, arrays) in epoch order. One that is missing is an error naming it, not a silently
    shorter diagnosis."""
    files = [run_features / f"bank_epoch_{e:04d}.npz" for e in sorted(set(epochs))]
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"{f}: the tail bank of epoch {int(f.stem[-4:])} is missing; "
                                    "re-run the evaluate stage (`dvc repro -f evaluate@<dataset>`)"
                                    " or restore it (`dvc checkout`)")
    out = []
    for f in files:
        with reading(f, "tail bank (numpy .npz)", "Re-run the evaluate stage "
                     "(`dvc repro -f evaluate@<dataset>`)."), np.load(f) as z:
            out.append((int(f.stem.removeprefix("bank_epoch_")), {k: z[k] for k in z.files}))
    return out
