"""The `infonce-lab` entry point: each command on real inputs, and `--help` of it and of every
stage script without importing torch (help must answer in well under a second)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from infonce_lab.commands import app

runner = CliRunner()
NO_TORCH = """
import runpy, sys
sys.argv = [sys.argv[1], "--help"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__") if sys.argv[0].endswith(".py") else \\
        runpy.run_module(sys.argv[0], run_name="__main__")
except SystemExit as exc:
    assert exc.code == 0, exc.code
heavy = sorted(m for m in ("torch", "transformers", "sklearn", "matplotlib") if m in sys.modules)
print("HEAVY:" + ",".join(heavy))
"""


@pytest.mark.parametrize("target", ["infonce_lab.commands",
                                    *sorted(p.name for p in (Path(__file__).parents[1] / "stages")
                                            .glob("*.py"))])
def test_help_imports_no_torch(target: str, repo_root: Path):
    path = target if "." in target and not target.endswith(".py") else str(repo_root / "stages" / target)
    proc = subprocess.run([sys.executable, "-c", NO_TORCH, path], capture_output=True, text=True,
                          cwd=repo_root, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    assert proc.stdout.strip().endswith("HEAVY:"), proc.stdout[-200:]


def test_check_summarises_and_rejects(repo_root: Path, tmp_path: Path):
    ok = runner.invoke(app, ["check", str(repo_root / "params.yaml")])
    assert ok.exit_code == 0 and "valid — 13 image configurations, 50 image runs" in ok.output
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["training"]["batch_size"] = 1
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    bad = runner.invoke(app, ["check", str(tmp_path / "bad.yaml")])
    assert bad.exit_code == 2 and "training.batch_size" in bad.output


def test_plots_check_on_the_committed_files(repo_root: Path):
    res = runner.invoke(app, ["plots", "--check", "--params", str(repo_root / "params.yaml"),
                              "--dvc-yaml", str(repo_root / "dvc.yaml")])
    assert res.exit_code == 0, res.output


def test_encode_an_image_model(tmp_path: Path):
    from infonce_lab.models import build_encoder
    from infonce_lab.models.build import checkpoint_meta, extract_features, save_encoder
    from infonce_lab.params import ResNetConfig

    cfg = ResNetConfig(widths=[8, 16], blocks=[1, 1], head_hidden=8, head_dim=8)
    x = np.random.default_rng(0).integers(0, 256, (10, 1, 8, 8), dtype=np.uint8)
    enc = build_encoder(cfg, 1, 8)
    save_encoder(enc, tmp_path / "model.pt", checkpoint_meta(cfg, x))
    np.save(tmp_path / "x.npy", x)
    res = runner.invoke(app, ["encode", str(tmp_path / "model.pt"), str(tmp_path / "x.npy"),
                              str(tmp_path / "f.npz"), "--batch-size", "4"])
    assert res.exit_code == 0, res.output
    with np.load(tmp_path / "f.npz") as f:
        h, z = extract_features(enc, x)
        np.testing.assert_allclose(f["h"], h, rtol=1e-5, atol=1e-6)
        assert f["z"].shape == z.shape
    np.save(tmp_path / "flat.npy", x[:, 0])
    bad = runner.invoke(app, ["encode", str(tmp_path / "model.pt"), str(tmp_path / "flat.npy"),
                              str(tmp_path / "g.npz")])
    assert bad.exit_code == 2 and "(N, C, H, W)" in bad.output
    assert not (tmp_path / "g.npz").exists()
