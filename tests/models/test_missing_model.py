"""A model that is not there says which stage writes it and how to fetch it, by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from infonce_lab.models.build import load_encoder


def test_a_missing_model_names_its_stage_and_dvc_pull(tmp_path: Path) -> None:
    path = tmp_path / "models/vision/digits/digits-r18-weince-cosine/digits-r18-weince-cosine-2/model.pt"
    with pytest.raises(FileNotFoundError) as err:
        load_encoder(path)
    message = str(err.value)
    assert "`dvc pull pretrain@digits-r18-weince-cosine`" in message
    assert "`dvc repro pretrain@digits-r18-weince-cosine`" in message
    assert "docs/sharing.md" in message and str(path) in message
