"""The docs' recipes for a new loss and a new schedule (docs/losses.md, "Adding a loss", "Adding a
schedule"), followed as written in a copy of the repository: each code block goes where the page
says, the loss's registry line into the registry, each YAML block into params.yaml on the tiny
profile, and `dvc repro` validates the params and trains with them."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml

from infonce_lab.devtools.profiles import apply, deep_merge
from infonce_lab.devtools.smoke import SKIP, copy_worktree, environment

pytestmark = pytest.mark.pipeline
ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "losses.md"


def _block(lang: str, marker: str) -> str:
    (found,) = [textwrap.dedent(b) for b in re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(), re.S)
                if marker in b]
    return found


def _registry_line(name: str) -> str:
    return re.search(rf"`({name}: lambda [^`]+)`", PAGE.read_text()).group(1)


def _body(code: str) -> str:
    """A block without its imports: it goes into a module that already has them."""
    return "\n".join(line for line in code.splitlines()
                     if not line.startswith(("from ", "import "))).strip()


def _replace(path: Path, old: str, new: str) -> None:
    source = path.read_text()
    assert source.count(old) == 1, f"{path}: the recipe's place {old!r} moved"
    path.write_text(source.replace(old, new))


def _follow_the_recipes(package: Path) -> None:
    (package / "losses" / "align_only.py").write_text(_block("python", "class AlignOnlyLoss"))
    objectives = package / "params" / "objectives.py"
    _replace(objectives, "\nLossConfig = Annotated[",
             f"{_body(_block('python', 'class AlignOnlyConfig'))}\n\n\nLossConfig = Annotated[")
    _replace(objectives, " | SigLIPConfig,", " | SigLIPConfig | AlignOnlyConfig,")
    _replace(objectives, "\nScheduleConfig = Annotated[",
             f"{_body(_block('python', 'class ExponentialSchedule'))}\n\n\nScheduleConfig = Annotated[")
    _replace(objectives, "    | NoSchedule,\n", "    | NoSchedule | ExponentialSchedule,\n")
    schedules = package / "schedules.py"
    schedules.write_text(schedules.read_text() + "\n\n" + _body(_block("python", "class ExponentialDecay"))
                         + "\n")
    registry = package / "pipeline" / "registry.py"
    _replace(registry, "\n\nLOSSES: dict",
             "\nfrom infonce_lab.losses.align_only import AlignOnlyLoss"
             "\nfrom infonce_lab.params.objectives import AlignOnlyConfig\n\nLOSSES: dict")
    _replace(registry, "\n}\n\n\ndef build_loss",
             f"\n    {_registry_line('AlignOnlyConfig')}\n}}\n\n\ndef build_loss")


def _train(root: Path, env: dict[str, str], tiny: dict, block: str, stage: str
           ) -> dict[str, pd.Series]:
    """params.yaml = the tiny profile + ``block``; `dvc repro` of ``stage``; its run's telemetry."""
    (root / "params.yaml").write_text(yaml.safe_dump(deep_merge(yaml.safe_load(yaml.safe_dump(tiny)),
                                                                yaml.safe_load(block)), sort_keys=False))
    for cmd in (["git", "add", "-A"], ["git", "commit", "-qm", stage]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    proc = subprocess.run([sys.executable, "-m", "dvc", "repro", stage], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    config = stage.split("@")[1]
    run = f"{config}/{config}-1"
    assert (root / "models/vision/digits" / run / "model.pt").is_file()
    folder = root / "reports/train" / run / "plots/metrics/train"
    return {p.stem: pd.read_csv(p, sep="\t").set_index("step").iloc[:, -1] for p in folder.glob("*.tsv")}


def test_the_docs_recipes_add_a_loss_and_a_schedule_that_train(tmp_path: Path) -> None:
    root = copy_worktree(ROOT, tmp_path / "lab", SKIP)
    _follow_the_recipes(root / "src" / "infonce_lab")
    apply("tiny", root / "params.yaml", root / "profiles")
    tiny = yaml.safe_load((root / "params.yaml").read_text())
    env = environment() | {"PYTHONPATH": str(root / "src")}  # the copy's package, edited
    subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
    where = subprocess.run([sys.executable, "-c", "import infonce_lab; print(infonce_lab.__file__)"],
                           cwd=root, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(root))

    loss = _train(root, env, tiny, _block("yaml", "align_only"), "pretrain@digits-tiny-align-learned")
    assert loss["loss"].notna().all() and loss["loss"].iloc[-1] < loss["loss"].iloc[0]  # it trained
    assert "tau" not in loss  # a `none` schedule: no temperature to log

    decay = _train(root, env, tiny, _block("yaml", "exponential"), "pretrain@digits-tiny-infonce-decay")
    # at every logged step, the τ the declared schedule gives: max(0.05, 0.5·exp(−0.05·t)), with
    # t the schedule's step (from 0) of the log's step (from 1: the steps taken)
    tau = decay["tau"]
    assert len(tau) > 2 and tau.iloc[-1] < tau.iloc[0]
    for step, value in tau.items():
        assert value == pytest.approx(max(0.05, 0.5 * math.exp(-0.05 * (step - 1))), rel=1e-6), step
    assert decay["loss"].notna().all()
