"""docs/params.md is the schema's own description: regenerated, it is byte-identical to the
committed page, and a page that lags the schema fails the check."""

from __future__ import annotations

from pathlib import Path

import pytest

from infonce_lab.devtools.params_reference import main, page
from infonce_lab.params import Params, SimulationConfig, WeinceConfig


def test_the_committed_reference_is_current(repo_root: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(repo_root)
    assert main(["--check"]) == 0


def test_every_key_of_the_schema_is_on_the_page_and_a_stale_page_fails(tmp_path: Path):
    text = page()
    for model in (Params, SimulationConfig, WeinceConfig):
        for name in model.model_fields:
            assert f"| `{name}` |" in text, name
    assert "| `min_tail_points` | int (≥ 3) | `32` |" in text  # a bound and a default, read off
    stale = tmp_path / "params.md"
    stale.write_text(text.replace("| `min_tail_points` | int (≥ 3) | `32` |", ""))
    assert main(["--check", "--page", str(stale)]) == 1
    assert main(["--page", str(stale)]) == 0 and stale.read_text() == text
