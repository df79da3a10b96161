"""Every `dvc exp run -S …` the README and docs/ show parses with DVC's own override parser (Hydra's
grammar: a value with spaces or `=` must be quoted inside the shell quotes) and, applied to
params.yaml the way DVC applies it, gives params that validate."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from dvc.utils.hydra import apply_overrides

from infonce_lab.params import load_params

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINE = re.compile(r"[^\n`]*dvc exp run[^`\n]*")
LOOP = re.compile(r"for (\w+) in ([^;]+);")


def readme_overrides(readme: str) -> list[str]:
    """Every `-S` value, a shell loop's variable replaced by each of its values."""
    found = []
    for line in LINE.findall(readme):
        values = {}
        if loop := LOOP.search(line):
            values = {loop.group(1): loop.group(2).split()}
            line = line[loop.end():]
        command = line[line.index("dvc exp run"):]
        words = shlex.split(command.split(";")[0], comments=True)
        for i, w in enumerate(words[:-1]):
            if w in ("-S", "--set-param"):
                value = words[i + 1]
                for var, options in values.items():
                    if f"${var}" in value:
                        found += [value.replace(f"${var}", o) for o in options]
                        break
                else:
                    found.append(value)
    return found


def test_the_readme_shows_overrides(repo_root: Path):
    assert len(readme_overrides((repo_root / "README.md").read_text())) >= 4


@pytest.mark.parametrize("override", sorted({o for page in PAGES for o in readme_overrides(
    page.read_text())}))
def test_a_readme_override_parses_and_validates(override: str, repo_root: Path, tmp_path: Path):
    params = tmp_path / "params.yaml"
    shutil.copy(repo_root / "params.yaml", params)
    apply_overrides(params, [override])
    load_params(params)


def test_an_unquoted_value_with_spaces_is_what_dvc_refuses(repo_root: Path, tmp_path: Path):
    params = tmp_path / "params.yaml"
    shutil.copy(repo_root / "params.yaml", params)
    with pytest.raises(Exception, match="Invalid `--set-param` value"):
        apply_overrides(params, ["training.launcher=torchrun --nproc_per_node=4"])
