"""The committed default remote (`.dvc/config`) is the folder beside the clone that the README
names: DVC resolves a relative url against `.dvc/`, so `../x` would land inside the repository,
and a `git add -A` after `dvc push` would commit every model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REMOTE = "infonce-lab-dvc-remote"


def _run(*cmd: str, cwd: Path) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{cmd}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_push_lands_beside_the_clone_and_git_stays_clean(repo_root: Path, tmp_path: Path):
    clone = tmp_path / "clone"
    clone.mkdir()
    dvc = (str(Path(sys.executable).with_name("dvc")),)
    _run("git", "init", "-q", cwd=clone)
    _run(*dvc, "init", "-q", cwd=clone)
    shutil.copy(repo_root / ".dvc" / "config", clone / ".dvc" / "config")
    (clone / "data").mkdir()
    (clone / "data" / "weights.bin").write_bytes(os.urandom(4096))
    _run(*dvc, "add", "-q", "data/weights.bin", cwd=clone)
    _run("git", "add", "-A", cwd=clone)
    _run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "data", cwd=clone)
    _run(*dvc, "push", "-q", cwd=clone)
    assert (tmp_path / REMOTE / "files" / "md5").is_dir(), "the remote is not beside the clone"
    assert not (clone / REMOTE).exists()
    assert _run("git", "status", "--porcelain", "--untracked-files=all", cwd=clone) == ""


def test_pull_says_how_to_configure_a_remote_that_is_not_there(repo_root: Path, tmp_path: Path):
    clone = tmp_path / "clone"
    clone.mkdir()
    dvc = (str(Path(sys.executable).with_name("dvc")),)
    lab = str(Path(sys.executable).with_name("infonce-lab"))
    _run("git", "init", "-q", cwd=clone)
    _run(*dvc, "init", "-q", cwd=clone)

    def pull() -> subprocess.CompletedProcess[str]:
        return subprocess.run([lab, "pull"], cwd=clone, capture_output=True, text=True,
                              env={**os.environ, "DVC_NO_ANALYTICS": "1"}, check=False)

    none = pull()
    assert none.returncode == 2 and "no default DVC remote" in none.stderr
    shutil.copy(repo_root / ".dvc" / "config", clone / ".dvc" / "config")
    absent = pull()
    assert absent.returncode == 2, absent.stderr
    assert str(tmp_path / REMOTE) in absent.stderr
    assert "dvc remote modify --local local url" in absent.stderr
    (clone / "weights.bin").write_bytes(payload := os.urandom(4096))
    _run(*dvc, "add", "-q", "weights.bin", cwd=clone)
    _run(*dvc, "push", "-q", cwd=clone)
    shutil.rmtree(clone / ".dvc" / "cache")
    (clone / "weights.bin").unlink()
    restored = pull()
    assert restored.returncode == 0, restored.stderr
    assert (clone / "weights.bin").read_bytes() == payload
