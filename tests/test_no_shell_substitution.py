"""No params value reaches a shell: dvc.yaml's commands substitute nothing, the stages take their
instance's names from DVC_STAGE and check them like flags, and the launcher is parsed into an
argument list that refuses anything a shell would interpret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infonce_lab.params import parse_launcher

HOSTILE_LAUNCHERS = [
    "torchrun; touch PWNED #", "python; rm -rf /", "torchrun --x=$(touch PWNED)",
    "torchrun --x=`touch PWNED`", "torchrun --nproc_per_node=4 && touch PWNED",
    "torchrun --a='b c'", "torchrun | tee x", "torchrun > x", "bash -c 'touch PWNED'",
    "python -c 'import os'", "torchrun --x 'a;b'", "torchrun 'unbalanced", "",
    "/usr/bin/python", "torchrun --nnodes=2 *",
    # shell syntax in the value of an allowed option
    "torchrun --master_addr=$(touch PWNED)", "torchrun --master_addr=`touch PWNED`",
    "torchrun --rdzv_id='b c'", "torchrun --master_addr 'a;b'",
    # options that change what runs, or write files outside the stage's outputs
    "torchrun --no-python --nproc_per_node=2", "torchrun --no_python", "torchrun -m os",
    "torchrun --module", "torchrun --run-path=x.py", "torchrun --log-dir=/tmp/anywhere",
    "torchrun --redirects=3", "torchrun --tee 3", "torchrun --nproc_per_node=2 --x",
]


@pytest.mark.parametrize("launcher", HOSTILE_LAUNCHERS)
def test_hostile_launchers_are_refused(launcher, raw, config_error) -> None:
    with pytest.raises(ValueError):
        parse_launcher(launcher)
    raw["training"]["launcher"] = launcher
    assert "training.launcher" in config_error(raw)


@pytest.mark.parametrize(("launcher", "argv"), [
    ("python", ["python"]),
    ("torchrun --nproc_per_node=4", ["torchrun", "--nproc_per_node=4"]),
    ("torchrun --nnodes 2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=node1:29500",
     ["torchrun", "--nnodes", "2", "--nproc_per_node=8", "--rdzv_backend=c10d",
      "--rdzv_endpoint=node1:29500"]),
    ("torchrun --standalone --nproc_per_node=2", ["torchrun", "--standalone",
                                                  "--nproc_per_node=2"]),
    ("torchrun --standalone --nproc-per-node 2", ["torchrun", "--standalone",
                                                  "--nproc-per-node", "2"]),
])
def test_the_documented_launchers_parse_to_argument_lists(launcher, argv) -> None:
    assert parse_launcher(launcher) == argv


def test_a_torchrun_launcher_reexecutes_the_stage_without_a_shell(raw) -> None:
    from infonce_lab.params import parse_params
    from infonce_lab.pipeline.launch import launch_argv

    raw["training"]["launcher"] = "torchrun --nproc_per_node=2"
    p = parse_params(raw)
    cmd = launch_argv(p, ["stages/pretrain.py"], {})
    assert cmd == [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                   "stages/pretrain.py"]
    assert launch_argv(p, ["stages/pretrain.py"], {"TORCHELASTIC_RUN_ID": "x"}) is None
    raw["training"]["launcher"] = "python"
    assert launch_argv(parse_params(raw), ["stages/pretrain.py"], {}) is None


def test_dvc_commands_substitute_nothing(repo_root) -> None:
    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    for name, st in stages.items():
        cmd = (st.get("do") or st)["cmd"]
        assert "${" not in cmd, (name, cmd)


@pytest.mark.parametrize(("dvc_stage", "message"), [
    ("simulate@s0;touch PWNED;#", "expected one of"),
    ("diagnose@a-b", "expected 1 names joined by '-'"),
    ("text_evaluate@$(touch PWNED)", "not in text.study.datasets"),
    ("evaluate", "give --dataset"),
])
def test_stage_names_from_dvc_are_checked_like_flags(tmp_path: Path, repo_root, dvc_stage,
                                                     message) -> None:
    stage = dvc_stage.split("@")[0]
    (tmp_path / "params.yaml").write_text((repo_root / "params.yaml").read_text())
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src"), "DVC_STAGE": dvc_stage}
    if "@" not in dvc_stage:
        env.pop("DVC_STAGE")
    proc = subprocess.run([sys.executable, str(repo_root / "stages" / f"{stage}.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("PWNED"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]
