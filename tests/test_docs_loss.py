"""The docs' recipe for a new loss (docs/losses.md, "Adding a loss"), followed as written in a copy
of the repository: the loss class and its params section go where the page says, its registry
line into the registry, its YAML block into params.yaml (on the tiny profile), and `dvc repro`
validates the params and trains the loss."""

from __future__ import annotations

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


def _blocks(lang: str) -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(), re.S)]


def _replace(path: Path, old: str, new: str) -> None:
    source = path.read_text()
    assert source.count(old) == 1, f"{path}: the recipe's place {old!r} moved"
    path.write_text(source.replace(old, new))


def test_the_docs_recipe_adds_a_loss_that_trains(tmp_path: Path) -> None:
    loss_code, section_code = [b for b in _blocks("python") if "AlignOnly" in b]
    (params_block,) = [b for b in _blocks("yaml") if "align_only" in b]
    registry_line = re.search(r"`(AlignOnlyConfig: lambda c: [^`]+)`", PAGE.read_text()).group(1)

    root = copy_worktree(ROOT, tmp_path / "lab", SKIP)
    package = root / "src" / "infonce_lab"
    (package / "losses" / "align_only.py").write_text(loss_code)
    # the section, in the module that defines what it imports; the union gains its member
    body = "\n".join(line for line in section_code.splitlines()
                     if not line.startswith(("from ", "import ")))
    objectives = package / "params" / "objectives.py"
    _replace(objectives, "\nLossConfig = Annotated[", f"{body.strip()}\n\n\nLossConfig = Annotated[")
    _replace(objectives, " | SigLIPConfig,", " | SigLIPConfig | AlignOnlyConfig,")
    registry = package / "pipeline" / "registry.py"
    _replace(registry, "\n\nLOSSES: dict", "\nfrom infonce_lab.losses.align_only import AlignOnlyLoss"
             "\nfrom infonce_lab.params.objectives import AlignOnlyConfig\n\nLOSSES: dict")
    _replace(registry, "\n}\n\n# Each takes the section", f"\n    {registry_line}\n}}\n\n# Each takes the section")

    apply("tiny", root / "params.yaml", root / "profiles")
    params = root / "params.yaml"
    raw = deep_merge(yaml.safe_load(params.read_text()), yaml.safe_load(params_block))
    params.write_text(yaml.safe_dump(raw, sort_keys=False))
    env = environment() | {"PYTHONPATH": str(root / "src")}  # the copy's package, edited
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "align"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    where = subprocess.run([sys.executable, "-c", "import infonce_lab; print(infonce_lab.__file__)"],
                           cwd=root, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(root))

    proc = subprocess.run([sys.executable, "-m", "dvc", "repro", "pretrain@digits-tiny-align-learned"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = "digits-tiny-align-learned/digits-tiny-align-learned-1"
    assert (root / "models/vision/digits" / run / "model.pt").is_file()
    loss = pd.read_csv(root / "reports/train" / run / "plots/metrics/train/loss.tsv", sep="\t")
    values = loss[loss.columns[-1]]
    assert values.notna().all() and values.iloc[-1] < values.iloc[0]  # it trained
