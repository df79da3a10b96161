"""The pretrain stage under ``training.launcher: torchrun``, for real: the stage re-executes
itself under ``torch.distributed.run`` (an argument list, no shell), two CPU workers (gloo) train
their halves of every global batch and rank 0 alone writes the outputs. The reference is the
same two ranks started by hand with the environment torchrun documents (RANK, WORLD_SIZE,
MASTER_ADDR, …) under the plain python launcher: the weights must be bit-identical, so the
re-exec hands the workers exactly the stage, flags and params they would have had. The cluster
recipe (docs/scaling.md: the same stage started on every node, one launcher string with a c10d
rendezvous, no node rank) runs here as two "nodes" — two stage processes in one checkout, as on
a shared filesystem, one worker each — against the same reference. (One process
against two is not compared here: the backbone's batch norm sees each rank's half-batch on the
CPU, where torch has no SyncBatchNorm; the views are the one-process views —
tests/train/test_rank_views.py — and the loss and gradients are — tests/losses.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

CONFIG = "digits-tiny-infonce-fixed_t05"
RUN = f"{CONFIG}-1"
STAGE = ["--dataset", "digits", "--backbone", "tiny", "--loss", "infonce", "--schedule",
         "fixed_t05"]


def _workspace(root: Path, repo_root: Path, launcher: str) -> dict[str, str]:
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["study"] = {"datasets": ["digits"], "backbones": ["tiny"], "losses": ["infonce"],
                    "schedules": ["fixed_t05"], "seeds": [1]}
    raw["backbones"] = {"tiny": {"kind": "resnet_cifar", "widths": [8, 16], "blocks": [1, 1],
                                 "head_hidden": 16, "head_dim": 8}}
    raw["schedules"] = {"fixed_t05": {"kind": "fixed", "tau": 0.5}}
    raw["step_cost"]["backbone"] = "tiny"  # a name under backbones:, which this replaces
    raw["training"] = {**raw["training"], "epochs": 2, "batch_size": 128,
                       "checkpoint_epochs": [1], "warmup_epochs": 0, "launcher": launcher,
                       "threads": 1}
    raw["text"]["study"] = {"datasets": [], "encoders": [], "losses": [], "schedules": [],
                            "seeds": []}
    raw["primary"]["seeds"] = []
    root.mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(raw))
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src"), "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(repo_root / "stages/download.py"), "--dataset", "digits"],
                   cwd=root, env=env, check=True, capture_output=True, timeout=120)
    return env


def _outputs(root: Path) -> tuple[dict[str, dict[str, torch.Tensor]], dict]:
    models = root / "models/vision/digits" / CONFIG / RUN
    weights = {str(f.relative_to(models)): torch.load(f, weights_only=True)["state_dict"]
               for f in sorted(models.rglob("*.pt"))}
    run = json.loads((root / "reports/train" / CONFIG / RUN / "run.json").read_text())
    return weights, run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


Outputs = tuple[dict[str, dict[str, torch.Tensor]], dict]


def _script(repo_root: Path) -> list[str]:
    return [sys.executable, str(repo_root / "stages/pretrain.py"), *STAGE]


def _wait(procs: list[subprocess.Popen]) -> list[str]:
    errs = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        errs.append(err)
    return errs


@pytest.fixture(scope="module")
def by_hand(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Outputs:
    """Two ranks started by hand with torchrun's environment, under the plain launcher."""
    root = tmp_path_factory.mktemp("ranks") / "by_hand"
    env = _workspace(root, repo_root, "python")
    port = _free_port()
    _wait([subprocess.Popen(_script(repo_root), cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**env, "RANK": str(r), "LOCAL_RANK": str(r),
                                 "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
           for r in range(2)])
    return _outputs(root)


def _same_training(launched: Path, by_hand: Outputs) -> None:
    (w_hand, run_hand), (w_run, run_run) = by_hand, _outputs(launched)
    assert sorted(w_run) == sorted(w_hand) == ["checkpoints/epoch_0001.pt", "model.pt"]
    for f in w_hand:
        for k in w_hand[f]:
            assert torch.equal(w_run[f][k], w_hand[f][k]), (f, k)
    assert run_run["processes"] == run_hand["processes"] == 2
    assert run_run["final_loss"] == run_hand["final_loss"] and run_run["steps"] == 20
    # rank 0 alone wrote: one run folder, nothing half-written or left over
    assert [p.name for p in (launched / "models/vision/digits" / CONFIG).iterdir()] == [RUN]
    assert not [p for p in launched.rglob("*") if p.name.endswith((".tmp", ".old"))]


@pytest.mark.timeout(600)
def test_torchrun_workers_train_what_two_hand_started_ranks_do(tmp_path: Path, repo_root: Path,
                                                               by_hand: Outputs) -> None:
    launched = tmp_path / "torchrun"
    env = _workspace(launched, repo_root, "torchrun --standalone --nproc_per_node=2")
    out = subprocess.run(_script(repo_root), cwd=launched, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "launching: " in out.stderr
    assert "-m torch.distributed.run --standalone --nproc_per_node=2" in out.stderr
    _same_training(launched, by_hand)


@pytest.mark.timeout(600)
def test_two_nodes_through_one_launcher_string_train_what_two_ranks_do(
        tmp_path: Path, repo_root: Path, by_hand: Outputs) -> None:
    """docs/scaling.md's multi-node recipe: every node runs the same stage with the same
    ``training.launcher`` (a c10d rendezvous; torchrun assigns the ranks), here two nodes on
    127.0.0.1 sharing one checkout."""
    launched = tmp_path / "nodes"
    launcher = (f"torchrun --nnodes=2 --nproc_per_node=1 --rdzv_backend=c10d "
                f"--rdzv_endpoint=127.0.0.1:{_free_port()} --rdzv_id=lab")
    env = _workspace(launched, repo_root, launcher)
    errs = _wait([subprocess.Popen(_script(repo_root), cwd=launched, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env)
                  for _ in range(2)])
    assert all("--nnodes=2 --nproc_per_node=1 --rdzv_backend=c10d" in e for e in errs)
    _same_training(launched, by_hand)
