"""Every shell block of the README runs as written from a fresh shell in a fresh clone: a block
that calls the venv's tools (dvc, infonce-lab, python) activates it first, each `make` target
exists, each `infonce-lab` and `dvc` command exists with the options it is given, and each
profile it applies ships. The blocks that fit a test's time (`infonce-lab profiles …`) run."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROFILES_DIR = ROOT / "profiles"
BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
VENV_TOOLS = {"dvc", "infonce-lab", "python"}


def blocks(text: str) -> list[list[list[str]]]:
    """Each block's commands as argv lists (comments dropped; a shell loop's body kept)."""
    out = []
    for block in BLOCK.findall(text):
        commands = []
        for line in block.splitlines():
            line = re.sub(r"^for \w+ in [^;]+; do (.*); done$", r"\1", line.strip())
            if words := shlex.split(line, comments=True):
                commands.append(words)
        out.append(commands)
    return out


README_BLOCKS = blocks((ROOT / "README.md").read_text())
COMMANDS = [c for b in README_BLOCKS for c in b]


def test_the_readme_has_blocks_of_every_kind():
    tools = {c[0] for c in COMMANDS}
    assert {"make", "source", "dvc", "infonce-lab"} <= tools, tools


@pytest.mark.parametrize("block", README_BLOCKS, ids=lambda b: " ; ".join(c[0] for c in b))
def test_a_block_activates_the_venv_before_its_tools(block: list[list[str]]):
    first = next((i for i, c in enumerate(block) if c[0] in VENV_TOOLS), None)
    if first is not None:
        assert block[0] == ["source", ".venv/bin/activate"], (
            f"{block[first]}: a fresh shell has no venv on PATH; start the block with "
            "`source .venv/bin/activate`")
    assert all(c[0] in VENV_TOOLS | {"make", "source"} for c in block), block


def test_every_make_target_exists():
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = {c[1] for c in COMMANDS if c[0] == "make"}
    assert named and named <= targets, named - targets


def _help(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv``'s command (its options and arguments dropped) asked for --help."""
    words = [w for w in argv if not w.startswith("-") and "=" not in w]
    return subprocess.run([*words, "--help"], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=120)


@pytest.mark.parametrize("argv", [c for c in COMMANDS if c[0] == "infonce-lab"],
                         ids=lambda c: " ".join(c[:3]))
def test_every_infonce_lab_command_exists(argv: list[str]):
    lab = str(Path(sys.executable).with_name("infonce-lab"))
    # A subcommand's positional argument (a profile's name) is not part of the command.
    path = argv[1:3] if argv[1] == "profiles" else argv[1:2]
    proc = _help([lab, *path])
    assert proc.returncode == 0, proc.stderr
    for option in (w.split("=")[0] for w in argv if w.startswith("--")):
        assert option in proc.stdout, f"{argv}: {option} is not an option"
    if argv[1:3] == ["profiles", "apply"]:
        assert (PROFILES_DIR / f"{argv[3]}.yaml").is_file()


@pytest.mark.parametrize("argv", [c for c in COMMANDS if c[0] == "dvc"],
                         ids=lambda c: " ".join(c[:3]))
def test_every_dvc_command_exists_with_its_options(argv: list[str]):
    dvc = str(Path(sys.executable).with_name("dvc"))
    # DVC's subcommands are the leading bare words (`exp run`, `remote modify`, `queue start`).
    path = []
    for w in argv[1:]:
        if w.startswith("-") or len(path) == 2:
            break
        path.append(w)
    proc = subprocess.run([dvc, *path, "--help"], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for option in (w for w in argv if w.startswith("-") and not w.startswith("-S")):
        assert option.split("=")[0] in proc.stdout, f"{argv}: {option} is not an option"


def test_the_profile_commands_run_as_written():
    lab = str(Path(sys.executable).with_name("infonce-lab"))
    listed = subprocess.run([lab, "profiles", "list"], cwd=ROOT, capture_output=True, text=True,
                            check=True, timeout=120).stdout
    # The README's comment on that line names every profile the command lists.
    line = next(x for x in (ROOT / "README.md").read_text().splitlines()
                if x.startswith("infonce-lab profiles list"))
    for profile in PROFILES_DIR.glob("*.yaml"):
        assert profile.stem in listed and profile.stem in line, profile.stem
