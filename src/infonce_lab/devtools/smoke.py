"""``make smoke``: a profile (by default ``profiles/tiny.yaml``) end to end — every stage kind, in
≤ 5 minutes on 2 cores — in a temporary copy of this repository, so this checkout's
``params.yaml``, ``dvc.lock`` and ``reports/`` stay as they are.

    python -m infonce_lab.devtools.smoke [--profile tiny] [--dir EMPTY_DIR]

The copy holds what a clone would (tracked files, and untracked ones git does not ignore), less
``reports/``, ``tests/`` and ``dvc.lock``; it becomes a git repository of its own (DVC and the
report's provenance read git) with the profile merged into its ``params.yaml``, and ``dvc repro``
runs there with this interpreter's ``bin/`` first on ``PATH``. The pipeline test prepares its
repository with :func:`prepare`, so the smoke run cannot rot.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from infonce_lab.devtools.profiles import apply

SKIP = ("reports/", "tests/", "dvc.lock")
# DVC and the provenance need a commit; a machine with no git identity must still make one.
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "infonce-lab smoke", "GIT_AUTHOR_EMAIL": "smoke@localhost",
                "GIT_COMMITTER_NAME": "infonce-lab smoke", "GIT_COMMITTER_EMAIL": "smoke@localhost"}


def copy_worktree(root: Path, dest: Path, skip: tuple[str, ...] = ()) -> Path:
    """The files a clone of ``root``'s working tree would hold (tracked, and untracked but not
    ignored: no .venv, no DVC outputs), less those whose path starts with one of ``skip``."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        src = root / rel
        if not rel.startswith(skip) and src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The stages' environment: this interpreter's bin/ first on PATH (``dvc repro`` starts
    ``python stages/…``), a git identity where none is set, no DVC analytics."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("DVC_NO_ANALYTICS", "1")
    for key, value in GIT_IDENTITY.items():
        env.setdefault(key, value)
    return env


def prepare(root: Path, dest: Path, profile: str, env: Mapping[str, str]) -> Path:
    """``dest`` (empty) as a repository of its own: ``root``'s worktree less :data:`SKIP`, the
    profile merged into its params.yaml (validated first), committed."""
    copy_worktree(root, dest, SKIP)
    apply(profile, dest / "params.yaml", dest / "profiles")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-qm", f"the {profile} profile"]):
        subprocess.run(cmd, cwd=dest, env=dict(env), check=True, capture_output=True)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="tiny", help="profiles/<name>.yaml (default: tiny)")
    parser.add_argument("--dir", type=Path, help="an empty folder for the copy (default: a new "
                                                 "temporary folder, kept for its report)")
    args = parser.parse_args(argv)
    if args.dir is not None and args.dir.exists() and any(args.dir.iterdir()):
        print(f"error: --dir {args.dir}: not empty; give an empty or new folder", file=sys.stderr)
        return 2
    dest = args.dir or Path(tempfile.mkdtemp(prefix=f"infonce-lab-{args.profile}-"))
    dest.mkdir(parents=True, exist_ok=True)
    env = environment()
    prepare(Path.cwd(), dest, args.profile, env)
    print(f"smoke: the {args.profile} profile in {dest}: dvc repro", flush=True)
    start = time.monotonic()
    rc = subprocess.run([sys.executable, "-m", "dvc", "repro"], cwd=dest, env=env).returncode
    took = time.monotonic() - start
    if rc == 0:
        print(f"smoke: done in {took:.0f} s; the report: {dest / 'reports' / 'index.html'}")
    else:
        print(f"smoke: dvc repro failed (exit {rc}) after {took:.0f} s in {dest}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
