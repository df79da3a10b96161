"""Every stage validates params.yaml before any work: a bad value exits non-zero, names the key
and leaves existing outputs untouched. The stages run in an empty folder with no data at all, so
the only way to produce the expected message is to fail on the params first."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

STAGES = {
    "download": ["--dataset", "digits"],
    "pretrain": ["--dataset", "digits", "--backbone", "resnet_digits", "--loss", "infonce",
                 "--schedule", "fixed_t02"],
    "evaluate": ["--dataset", "digits"],
    "diagnose": ["--dataset", "digits"],
    "noise_floor": [],
    "simulate": ["--experiment", "s0"],
    "download_text": ["--dataset", "gensim_lee"],
    "tokenize_text": ["--dataset", "gensim_lee", "--encoder", "minilm"],
    "text_pretrain": ["--dataset", "gensim_lee", "--encoder", "minilm", "--loss", "simcse_infonce",
                      "--schedule", "simcse_t005"],
    "text_evaluate": ["--dataset", "gensim_lee"],
    "aggregate": [],
    "report": [],
}


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_bad_params_fail_fast_and_touch_nothing(tmp_path, repo_root, stage):
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["training"]["batch_size"] = 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    for rel in ("reports/index.html", "reports/summary.json", "models/vision/digits/x/model.pt",
                "reports/metrics/runs/digits/x.json", "data/features/vision/digits/x/train.npz",
                "models/text/gensim_lee/x/model.safetensors",
                "reports/metrics/text/runs/gensim_lee/x.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"previous output {rel}")
    before = _digest(tmp_path)
    proc = subprocess.run([sys.executable, str(repo_root / "stages" / f"{stage}.py"), *STAGES[stage]],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src")})
    assert proc.returncode == 2, proc.stderr
    assert "training.batch_size = 1" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _digest(tmp_path) == before


# A name the study does not hold, per stage flag: refused with the list it must come from.
BAD_NAMES = {
    "pretrain --loss": ("pretrain", {"--loss": "nope"}, "digits-resnet_digits-nope-fixed_t02 is "
                        "not part of the study"),
    "pretrain primary loss at a grid schedule": (
        "pretrain", {"--loss": "weince_recipe"}, "weince_recipe-fixed_t02 is not part of"),
    "evaluate --dataset": ("evaluate", {"--dataset": "mnist_5k"}, "not in study.datasets"),
    "diagnose --dataset": ("diagnose", {"--dataset": "nope"}, "not in study.datasets"),
    "download --dataset": ("download", {"--dataset": "nope"}, "not defined under 'datasets:'"),
    "simulate --experiment": ("simulate", {"--experiment": "nope"}, "expected one of s0"),
    "text_pretrain --encoder": ("text_pretrain", {"--encoder": "tiny_bert"},
                                "is not part of text.study"),
    "tokenize_text --encoder": ("tokenize_text", {"--encoder": "tiny_bert"},
                                "not in text.study.encoders"),
    "tokenize_text --dataset": ("tokenize_text", {"--dataset": "wiki1m_stsb"},
                                "not in text.study.datasets"),
    "text_evaluate --dataset": ("text_evaluate", {"--dataset": "nope"},
                                "not in text.study.datasets"),
}


@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_a_flag_outside_the_study_is_refused_before_any_work(tmp_path, repo_root, case):
    stage, change, message = BAD_NAMES[case]
    args = list(STAGES[stage])
    for flag, value in change.items():
        args[args.index(flag) + 1] = value
    (tmp_path / "params.yaml").write_text((repo_root / "params.yaml").read_text())
    proc = subprocess.run([sys.executable, str(repo_root / "stages" / f"{stage}.py"), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src")})
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_the_params_check_comes_before_the_heavy_imports(tmp_path, repo_root, stage):
    # What keeps a stage's own check cheap (≈ 1 s, not the ≈ 10 s dvc repro took to say the
    # same): it must refuse bad params with torch, transformers and the rest unimportable.
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["training"]["batch_size"] = 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    heavy = ["torch", "torchvision", "transformers", "datasets", "sklearn", "scipy", "pandas",
             "matplotlib", "dvclive"]
    code = (f"import runpy, sys\nsys.modules.update(dict.fromkeys({heavy!r}))\n"
            f"sys.argv = [{str(repo_root / 'stages' / f'{stage}.py')!r}, *{STAGES[stage]!r}]\n"
            "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src")})
    assert proc.returncode == 2 and "training.batch_size = 1" in proc.stderr, proc.stderr[-1500:]
