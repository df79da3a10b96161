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


@pytest.fixture()
def raw(repo_root):
    """params.yaml as a plain mapping, to break in one place per test."""
    import yaml

    return yaml.safe_load((repo_root / "params.yaml").read_text())


@pytest.fixture()
def config_error():
    """``config_error(raw) -> message``: the ConfigError that parsing ``raw`` must raise."""
    from infonce_lab.config import ConfigError, parse_params

    def error(raw: dict) -> str:
        with pytest.raises(ConfigError) as exc:
            parse_params(raw)
        return str(exc.value)

    return error
