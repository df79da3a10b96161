from __future__ import annotations

import numpy as np
import pytest

from infonce_lab.data import load_raw, materialise, verify_manifest
from infonce_lab.params import DigitsDataset


def test_digits_materialise_and_verify(tmp_path):
    m = materialise(DigitsDataset(test_fraction=0.25, split_seed=0), tmp_path / "digits")
    assert m["n_train"] + m["n_test"] == 1797 and m["shape"] == [1, 8, 8]
    d = load_raw(tmp_path / "digits")
    assert d.train_x.dtype == np.float32 and d.train_x.min() >= 0 and d.train_x.max() <= 1
    assert set(np.unique(d.test_y)) == set(range(10))
    # stratified: every class has ~25% in the test split
    counts = np.bincount(d.test_y) / (np.bincount(d.test_y) + np.bincount(d.train_y))
    assert np.all(np.abs(counts - 0.25) < 0.02)


def test_materialise_is_deterministic(tmp_path):
    a = materialise(DigitsDataset(), tmp_path / "a")
    b = materialise(DigitsDataset(), tmp_path / "b")
    assert a["files"] == b["files"]


def test_corruption_is_detected_and_named(tmp_path):
    materialise(DigitsDataset(), tmp_path / "digits")
    with open(tmp_path / "digits" / "test.npz", "ab") as fh:
        fh.write(b"x")
    with pytest.raises(ValueError, match=r"test\.npz: checksum mismatch"):
        verify_manifest(tmp_path / "digits")


def test_missing_manifest(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the download stage"):
        load_raw(tmp_path)
