"""Downsampled ImageNet 32×32 (Chrabaszcz et al., 2017) from the npz batches the user downloads by
hand (an image-net.org account is needed): never fetched here, read from ``datasets.<name>.root``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from infonce_lab.data.readers.common import Reader, labels_from, planes_to_chw, require
from infonce_lab.data.splits import ImageSplits

IMAGENET32_URL = "https://image-net.org/download-images"
IMAGENET32_TRAIN = [f"Imagenet32_train_npz/train_data_batch_{i}.npz" for i in range(1, 11)]
IMAGENET32_VAL = "Imagenet32_val_npz/val_data.npz"


def _read_npz_batches(paths: Sequence[Path], size: int,
                      n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate npz batches into one preallocated array.

    The training set is 3.9 GB of uint8; reading the labels first (npz members load lazily) lets
    the images go straight into the result instead of doubling peak memory with a concatenate.
    """
    labels = []
    for path in paths:
        with np.load(path) as z:
            labels.append(labels_from(z["labels"], 1, n_classes, path))
    x = np.empty((sum(len(y) for y in labels), 3, size, size), dtype=np.uint8)
    at = 0
    for path, y in zip(paths, labels, strict=True):
        with np.load(path) as z:
            batch = planes_to_chw(z["data"], 3, size)
        if len(batch) != len(y):
            raise ValueError(f"{path}: {len(batch)} images but {len(y)} labels")
        x[at:at + len(y)] = batch
        at += len(y)
    return x, np.concatenate(labels)


def read_imagenet32(root: str | Path) -> ImageSplits:
    """Downsampled ImageNet 32×32 (Chrabaszcz et al., 2017): 1,281,167 train, 50,000 val (test).

    The npz files must be downloaded by hand (an image-net.org account is needed) and are never
    fetched here. Labels 1..1000 become 0..999; the archives carry no class names, so classes are
    the label numbers (they follow the ILSVRC-2012 devkit's ``map_clsloc.txt`` order).
    """
    root = Path(root)
    train, val = [root / p for p in IMAGENET32_TRAIN], root / IMAGENET32_VAL
    require([*train, val], "ImageNet 32x32", (
        f"Log in at {IMAGENET32_URL}, download 'Downsampled ImageNet 32x32' (the npz version: "
        f"Imagenet32_train_npz.zip and Imagenet32_val_npz.zip) and unzip both into {root}."))
    n_classes = 1000
    train_x, train_y = _read_npz_batches(train, 32, n_classes)
    test_x, test_y = _read_npz_batches([val], 32, n_classes)
    return ImageSplits(train_x, train_y, test_x, test_y, [str(c) for c in range(n_classes)],
                       source=f"Downsampled ImageNet 32x32, npz, test = val set ({IMAGENET32_URL})")


IMAGENET32 = Reader(lambda cfg, downloads: read_imagenet32(cfg.root))
