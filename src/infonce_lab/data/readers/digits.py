"""scikit-learn's digits, the embedded default: 1,797 real 8×8 handwritten digits shipped inside
scikit-learn, so the study runs offline. scikit-learn ships only the test part of UCI's optdigits,
so there is no official split: a stratified train/test split with a seed from params."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from infonce_lab.data.readers.common import Reader
from infonce_lab.data.splits import LabelledSplits, stratified_split
from infonce_lab.params import DigitsDataset


def read(cfg: DigitsDataset, downloads: Path | None = None) -> LabelledSplits:
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


DIGITS = Reader(read)
