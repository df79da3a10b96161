"""Resumable training: a pretrain stage killed mid-run (SIGKILL, no chance to clean up) and run
again with the same params ends with exactly the weights of an uninterrupted run, keeping the
seeds of its configuration that had finished; a non-finite loss stops the loop with a clear
message and keeps the last good state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from infonce_lab.params import (
    DigitsAugment,
    FixedSchedule,
    InfoNCEConfig,
    ResNetConfig,
    TrainingConfig,
)
from infonce_lab.pipeline.pretrain import train_image
from infonce_lab.train.checkpointing import load_state
from infonce_lab.train.loop import Resume

CONFIG = "digits-tiny-infonce-fixed_t05"
RUNS = [f"{CONFIG}-1", f"{CONFIG}-2"]  # one stage trains both, in this order
TINY = {
    "study": {"datasets": ["digits"], "backbones": ["tiny"], "losses": ["infonce"],
              "schedules": ["fixed_t05"], "seeds": [1, 2]},
    "backbones": {"tiny": {"kind": "resnet_cifar", "widths": [8, 16], "blocks": [1, 1],
                           "head_hidden": 16, "head_dim": 8}},
    "schedules": {"fixed_t05": {"kind": "fixed", "tau": 0.5}},
    "step_cost": {"backbone": "tiny"},  # a name under backbones:, which TINY replaces
    "training": {"epochs": 8, "batch_size": 128, "checkpoint_epochs": [2, 6],
                 "warmup_epochs": 1, "checkpoint_every_steps": 7, "log_every_steps": 3},
}


def _workspace(root: Path, repo_root: Path, seeds: list[int] | None = None) -> dict[str, str]:
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    for k, v in TINY.items():
        raw[k] = {**raw[k], **v} if isinstance(v, dict) and k in ("training", "step_cost") else v
    if seeds is not None:
        raw["study"] = {**raw["study"], "seeds": seeds}
    raw["text"]["study"] = {"datasets": [], "encoders": [], "losses": [], "schedules": [],
                            "seeds": []}
    raw["primary"]["seeds"] = []  # its backbone is not in the tiny profile
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(yaml.safe_dump(raw))
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src"), "OMP_NUM_THREADS": "2"}
    subprocess.run([sys.executable, str(repo_root / "stages/download.py"), "--dataset", "digits"],
                   cwd=root, env=env, check=True, capture_output=True, timeout=120)
    return env


def _pretrain(repo_root: Path) -> list[str]:
    return [sys.executable, str(repo_root / "stages/pretrain.py"), "--dataset", "digits",
            "--backbone", "tiny", "--loss", "infonce", "--schedule", "fixed_t05"]


def _weights(root: Path) -> dict[str, dict[str, torch.Tensor]]:
    out = {}
    for f in sorted((root / "models/vision/digits" / CONFIG).rglob("*.pt")):
        out[str(f.relative_to(root))] = torch.load(f, weights_only=True)["state_dict"]
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory, repo_root) -> Path:
    """An uninterrupted stage run of both seeds, one after the other (shared by two tests)."""
    ref = tmp_path_factory.mktemp("resume") / "reference"
    env = _workspace(ref, repo_root)
    subprocess.run(_pretrain(repo_root), cwd=ref, env=env, check=True, capture_output=True,
                   timeout=300)
    return ref


@pytest.mark.timeout(600)
def test_killed_stage_resumes_to_identical_weights(tmp_path, repo_root, kill_after_state,
                                                   reference):
    ref, killed = reference, tmp_path / "killed"
    env = _workspace(killed, repo_root)
    # into the second seed, past its epoch-2 checkpoint (10 steps per epoch) and a few states
    kill_after_state(_pretrain(repo_root), killed, env, killed / ".resume" / RUNS[1] / "state.pt",
                     21)
    assert not (killed / "models/vision/digits" / CONFIG).exists()  # nothing half-written
    assert (killed / ".resume" / RUNS[0] / "finished" / "model" / "model.pt").is_file()
    # Mid-run, the telemetry of the run in progress is readable in live/<run>/ (dvc plots show).
    live = killed / "live" / RUNS[1] / "plots/metrics/train/loss.tsv"
    assert len(live.read_text().splitlines()) >= 2, "no live telemetry mid-run"
    assert not (killed / "live" / RUNS[0]).exists()  # a finished run's moved into its output
    done = subprocess.run(_pretrain(repo_root), cwd=killed, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{RUNS[0]}: finished before the stage was stopped" in done.stdout
    assert f"resuming {RUNS[1]}" in done.stdout
    first, second = (yaml.safe_load((killed / "reports/train" / CONFIG / r / "run.json")
                                    .read_text()) for r in RUNS)
    assert first["resumed_from_step"] == 0 and first["steps"] == 80
    assert second["resumed_from_step"] >= 21 and second["steps"] == 80
    a, b = _weights(ref), _weights(killed)
    assert set(a) == set(b) == {f"models/vision/digits/{CONFIG}/{r}/{f}" for r in RUNS for f in (
        "model.pt", "checkpoints/epoch_0002.pt", "checkpoints/epoch_0006.pt")}
    for name in a:
        for key in a[name]:
            assert torch.equal(a[name][key], b[name][key]), (name, key)
    # The replayed telemetry covers the whole run, not only the steps after the resume.
    for r in RUNS:
        tsv = Path("reports/train") / CONFIG / r / "plots/metrics/train/loss.tsv"
        assert (killed / tsv).read_text() == (ref / tsv).read_text()
    assert not (killed / ".resume").exists() or not any((killed / ".resume").iterdir())
    assert not (killed / "live").exists()
    assert "views/s · ETA" in done.stderr  # the progress line (a log: one per interval)


@pytest.mark.timeout(600)
def test_a_seed_trained_after_another_in_one_process_equals_it_trained_alone(tmp_path, repo_root,
                                                                             reference):
    """One stage trains a configuration's seeds one after another: nothing of the first (RNG
    streams, thread settings, cached state) may reach the second."""
    alone = tmp_path / "alone"
    env = _workspace(alone, repo_root, [2])
    subprocess.run(_pretrain(repo_root), cwd=alone, env=env, check=True, capture_output=True,
                   timeout=300)
    a, b = _weights(reference), _weights(alone)
    second = {k: v for k, v in a.items() if f"/{RUNS[1]}/" in k}
    assert set(second) == set(b) and len(b) == 3
    for name in b:
        for key in b[name]:
            assert torch.equal(second[name][key], b[name][key]), (name, key)


def test_changed_params_do_not_resume_a_foreign_state(tmp_path, digits_splits):
    cfg = TrainingConfig(epochs=2, batch_size=128, checkpoint_every_steps=3, warmup_epochs=0)
    kw = {"backbone": ResNetConfig(widths=[8], blocks=[1], head_hidden=8, head_dim=4),
          "loss": InfoNCEConfig(), "schedule": FixedSchedule(tau=0.5), "augment": DigitsAugment(),
          "training": cfg, "seed": 0}
    first = train_image(digits_splits.train_x, resume=Resume(tmp_path / "s.pt", "A", 3), **kw)
    assert load_state(tmp_path / "s.pt", "A")["step"] == 18  # the last multiple of 3 below 20
    assert load_state(tmp_path / "s.pt", "B") is None
    fresh = train_image(digits_splits.train_x, resume=Resume(tmp_path / "s.pt", "B", 0), **kw)
    assert fresh.resumed_from == 0
    for k, v in first.encoder.state_dict().items():
        assert torch.equal(v, fresh.encoder.state_dict()[k])


def test_non_finite_loss_stops_and_keeps_the_last_good_state(tmp_path, digits_splits,
                                                              monkeypatch):
    import infonce_lab.pipeline.training_run as training

    real = training.build_loss
    bad_call = {"n": 8}

    def poisoned(cfg):  # noqa: ANN001, ANN202
        fn = real(cfg)
        calls = {"n": 0}

        class Wrapped:
            candidates = fn.candidates

            def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
                calls["n"] += 1
                value, stats = fn(z1, z2, tau)
                return (value * np.nan if calls["n"] == bad_call["n"] else value), stats

            def state_dict(self):  # noqa: ANN202
                return fn.state_dict()

            def load_state_dict(self, s):  # noqa: ANN001, ANN202
                fn.load_state_dict(s)

        return Wrapped()

    monkeypatch.setattr(training, "build_loss", poisoned)
    cfg = TrainingConfig(epochs=3, batch_size=128, checkpoint_every_steps=3, warmup_epochs=0)
    with pytest.raises(FloatingPointError, match=r"non-finite loss at step 7.*kept in"):
        train_image(digits_splits.train_x,
                      backbone=ResNetConfig(widths=[8], blocks=[1], head_hidden=8, head_dim=4),
                      loss=InfoNCEConfig(), schedule=FixedSchedule(tau=0.5),
                      augment=DigitsAugment(), training=cfg, seed=0,
                      resume=Resume(tmp_path / "s.pt", "A", 3))
    state = load_state(tmp_path / "s.pt", "A")
    assert state["step"] == 6 and all(torch.isfinite(v).all() for v in state["model"].values()
                                      if v.is_floating_point())
    # before the first state is written there is none to keep, and the message does not say so
    bad_call["n"] = 2
    with pytest.raises(FloatingPointError, match=r"non-finite loss at step 1") as err:
        train_image(digits_splits.train_x,
                    backbone=ResNetConfig(widths=[8], blocks=[1], head_hidden=8, head_dim=4),
                    loss=InfoNCEConfig(), schedule=FixedSchedule(tau=0.5),
                    augment=DigitsAugment(), training=cfg, seed=0,
                    resume=Resume(tmp_path / "none.pt", "A", 3))
    assert "kept in" not in str(err.value) and not (tmp_path / "none.pt").exists()
