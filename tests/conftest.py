from __future__ import annotations

from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _two_threads() -> None:
    torch.set_num_threads(2)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def digits_splits():
    from infonce_lab.config import DigitsDataset
    from infonce_lab.data.datasets import DATASETS

    return DATASETS["digits"](DigitsDataset())
