"""A dataset in memory and on disk: the train/test (and unlabeled) splits a reader returns, and
``data/raw/<name>/`` as the download stage writes it — ``{train,test}.npz`` (images (n, C, H, W):
float32 in [0, 1] for the digits, uint8 for the image datasets, whose float32 copy would be four
times larger; int64 labels) and ``MANIFEST.json`` with the SHA-256 of each file, which every later
stage checks before reading."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from infonce_lab.io import atomic_dir, read_json, save_npz_atomic, sha256_file, write_json_atomic


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


@dataclass(frozen=True)
class ImageSplits(LabelledSplits):
    """Splits of uint8 (n, C, H, W) images; STL-10's unlabeled split (pretraining only) is a
    read-only memory map when read from disk."""

    def __post_init__(self) -> None:
        # Check at construction so that a reader bug fails here, not in a training stage hours on.
        for name in ("train", "test"):
            x, y = getattr(self, f"{name}_x"), getattr(self, f"{name}_y")
            _check_images(name, x)
            if y.dtype != np.int64 or y.shape != (len(x),):
                raise ValueError(f"{name}_y: expected int64 ({len(x)},), got {y.dtype} {y.shape}")
            if len(y) and (y.min() < 0 or y.max() >= len(self.classes)):
                raise ValueError(f"{name}_y: labels outside 0..{len(self.classes) - 1}")
        if self.train_x.shape[1:] != self.test_x.shape[1:]:
            raise ValueError(f"train and test image shapes differ: {self.train_x.shape[1:]} vs "
                             f"{self.test_x.shape[1:]}")
        if self.unlabeled_x is not None:
            _check_images("unlabeled", self.unlabeled_x)


def _check_images(name: str, x: np.ndarray) -> None:
    if x.dtype != np.uint8 or x.ndim != 4:
        raise ValueError(f"{name}_x: expected uint8 (n, C, H, W), got {x.dtype} {x.shape}")


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


def materialise_images(splits: ImageSplits, out_dir: str | Path,
                       extra: dict[str, Any]) -> dict[str, Any]:
    """:func:`write_splits` of uint8 images: the manifest adds
    ``n_unlabeled`` and ``dtype`` ("uint8"). ``extra`` must give ``dataset`` and may add keys
    (archive digests, parameters) but not replace the computed ones."""
    computed = {"source", "classes", "shape", "n_train", "n_test", "n_unlabeled", "dtype", "files"}
    if "dataset" not in extra:
        raise KeyError("materialise_images: extra must name the dataset ('dataset' key)")
    clash = sorted(computed & extra.keys())
    if clash:
        raise ValueError(f"materialise_images: extra may not set computed keys {clash}")
    n_unlabeled = 0 if splits.unlabeled_x is None else len(splits.unlabeled_x)
    return write_splits(out_dir, splits, extra, {"n_unlabeled": n_unlabeled, "dtype": "uint8"})
