"""The `infonce-lab` entry point: each command on real inputs, and `--help` of it and of every
stage script without importing torch (help must answer in well under a second)."""

from __future__ import annotations

import ast
import os
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
    # click's plain conventions: the command's description, each option's help, no type column
    assert "<str>" not in proc.stdout and "<bool>" not in proc.stdout, proc.stdout
    if target.endswith(".py"):
        doc = ast.get_docstring(ast.parse(Path(path).read_text())) or ""
        first = " ".join(doc.split()[:4])
        assert first and first in " ".join(proc.stdout.split()), proc.stdout
        options = [line for line in proc.stdout.splitlines() if line.strip().startswith("--")
                   and not line.strip().startswith("--help")]
        assert all(len(line.split(maxsplit=2)) == 3 for line in options), proc.stdout


def test_version_and_profile_subcommands(tmp_path: Path, repo_root: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import version

    assert runner.invoke(app, ["--version"]).output.strip() == f"infonce-lab {version('infonce-lab')}"
    monkeypatch.chdir(repo_root)
    listed = runner.invoke(app, ["profiles", "list"])
    names = [line.split()[0] for line in listed.output.splitlines()]
    assert listed.exit_code == 0 and names == sorted(p.stem for p in (repo_root / "profiles").glob("*.yaml"))
    shown = runner.invoke(app, ["profiles", "show", "tiny"])
    assert shown.output == (repo_root / "profiles/tiny.yaml").read_text()
    unknown = runner.invoke(app, ["profiles", "show", "nope"])
    assert unknown.exit_code == 2 and "no such profile (known: paper_simcse" in unknown.output
    params = tmp_path / "params.yaml"
    params.write_text((repo_root / "params.yaml").read_text())
    applied = runner.invoke(app, ["profiles", "apply", "tiny", "--params", str(params)])
    assert applied.exit_code == 0, applied.output
    merged = yaml.safe_load(params.read_text())
    assert merged["study"]["backbones"] == ["tiny"] and merged["training"]["epochs"] == 2
    assert "#" in params.read_text()  # params.yaml's comments kept


def test_check_summarises_and_rejects(repo_root: Path, tmp_path: Path):
    ok = runner.invoke(app, ["check", str(repo_root / "params.yaml")])
    assert ok.exit_code == 0 and "valid — 14 image configurations, 74 image runs" in ok.output
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["training"]["batch_size"] = 1
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    bad = runner.invoke(app, ["check", str(tmp_path / "bad.yaml")])
    assert bad.exit_code == 2 and "training.batch_size" in bad.output


def test_plots_check_on_the_committed_files(repo_root: Path):
    res = runner.invoke(app, ["plots", "--check", "--params", str(repo_root / "params.yaml")])
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


STAGE = """import json, yaml
p = yaml.safe_load(open("params.yaml"))
acc = 80 + p["training"]["epochs"] + len(p["study"]["seeds"]) / 10
json.dump({"verdicts.reproduced": 3, "grid.infonce-fixed_t02.few.probe_test_acc": acc},
          open("headline.json", "w"))
"""


def test_exps_shows_only_what_differs_within_120_columns(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@t", "DVC_NO_ANALYTICS": "1"}.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "params.yaml").write_text(
        "training: {epochs: 3, lr: 0.1}\nstudy: {seeds: [1, 2], datasets: [digits]}\n")
    (tmp_path / "make.py").write_text(STAGE)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  train:\n    cmd: python make.py\n    deps: [make.py]\n    params: [training, study]\n"
        "    metrics:\n      - headline.json:\n          cache: false\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def sh(*cmd: str) -> None:
        subprocess.run(list(cmd), cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)

    dvc = (sys.executable, "-m", "dvc")
    for cmd in (("git", "init", "-q"), (*dvc, "init", "-q"), (*dvc, "repro"), ("git", "add", "-A"),
                ("git", "commit", "-qm", "study"), (*dvc, "exp", "run", "-S", "training.epochs=5",
                                                      "-n", "longer")):
        sh(*cmd)
    result = runner.invoke(app, ["exps"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 120
    assert lines[0].split()[1:] == ["longer", "workspace"]  # after the branch's own column
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:] if not line.startswith("──")}
    assert rows["training.epochs"] == ["3", "5", "5"]
    assert rows["grid.infonce-fixed_t02.few.probe_test_acc"] == ["83.2", "85.2", "85.2"]
    assert "training.lr" not in rows and "study.datasets" not in rows  # unchanged params
    assert "verdicts.reproduced" not in rows  # unchanged metric
    every = runner.invoke(app, ["exps", "--all-metrics"])
    assert "verdicts.reproduced" in every.output
