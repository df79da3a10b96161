"""The pretrain stage under ``training.launcher``: a torchrun launcher re-executes the stage
script under ``python -m torch.distributed.run`` with its options, as an argument list (no
shell), so nothing from params.yaml is ever parsed by a shell."""

from __future__ import annotations

import os
import sys

from infonce_lab.params import Params, parse_launcher


def launch_argv(params: Params, argv: list[str], environ: dict[str, str]) -> list[str] | None:
    """The command that must run this stage instead of this process, or None when this process
    is the one (the launcher is python, or this is already a worker torchrun started).
    ``argv``: this process's ``sys.argv`` (the script and its flags)."""
    launcher = parse_launcher(params.training.launcher)
    if launcher[0] != "torchrun" or "TORCHELASTIC_RUN_ID" in environ:
        return None
    return [sys.executable, "-m", "torch.distributed.run", *launcher[1:], *argv]


def relaunch_if_needed(params: Params) -> None:
    """Replace this process by torchrun when ``training.launcher`` asks for it."""
    cmd = launch_argv(params, list(sys.argv), dict(os.environ))
    if cmd is not None:
        print(f"launching: {' '.join(cmd)}", file=sys.stderr, flush=True)
        os.execv(cmd[0], cmd)
