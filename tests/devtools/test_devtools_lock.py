"""dvc.lock pruning keeps exactly the stages dvc.yaml defines, in DVC's own format."""

from __future__ import annotations

from pathlib import Path

from infonce_lab.devtools.lock import prune


def test_prune_removes_only_stale_entries(tmp_path: Path):
    lock = tmp_path / "dvc.lock"
    lock.write_text("schema: '2.0'\nstages:\n  a@1:\n    cmd: x\n  gone@2:\n    cmd: y\n"
                    "  b:\n    cmd: z\n")
    assert prune(lock, ["a@1", "b"]) == ["gone@2"]
    text = lock.read_text()
    assert "gone@2" not in text and "a@1:" in text and "b:" in text and "schema: '2.0'" in text
    before = lock.stat().st_mtime_ns
    assert prune(lock, ["a@1", "b"]) == []
    assert lock.stat().st_mtime_ns == before  # nothing to remove: not rewritten
    assert prune(tmp_path / "missing.lock", ["a"]) == []


# ---------------------------------------------------------------- a lock a kill broke
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from infonce_lab.devtools.lock import GOOD, clear_broken_rwlock, readable  # noqa: E402

PIPELINE = """stages:
  first:
    cmd: python -c "open('a.txt','w').write('a')"
    outs: [a.txt]
  second:
    cmd: python -c "open('b.txt','w').write(open('a.txt').read()+'b')"
    deps: [a.txt]
    outs: [b.txt]
"""


def _wrapper(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run([sys.executable, "-m", "infonce_lab.devtools.lock", "repro"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lockproject")
    (root / "dvc.yaml").write_text(PIPELINE)
    subprocess.run([str(Path(sys.executable).with_name("dvc")), "init", "--no-scm", "-q"],
                   cwd=root, check=True)
    first = _wrapper(root)
    assert first.returncode == 0, first.stderr
    assert (root / GOOD).read_bytes() == (root / "dvc.lock").read_bytes()
    return root


# Where the kill cuts the new file: nowhere yet, inside an entry's fields (both refused by DVC),
# between two entries, and inside the last (both read by DVC: it lacks the later entries).
CUTS = {"empty": "", "inside outs": "    outs:\n    - p", "before second": "  second:\n   ",
        "between entries": "      size: 1\n", "inside the last": "    outs:\n    - path: b.txt\n"}


@pytest.mark.parametrize("cut", sorted(CUTS))
def test_a_lock_cut_by_a_kill_is_restored_and_the_run_completes(project: Path, cut: str):
    """A kill while DVC rewrites dvc.lock leaves a prefix of the new file: empty, cut between
    entries, or cut inside one. One DVC would refuse is replaced by the last good lock; one it
    reads (a prefix that ends between fields) only lacks entries, whose stages DVC restores from
    its run cache. Either way the run ends with the outputs and the lock of an uninterrupted run."""
    lock = project / "dvc.lock"
    whole = lock.read_bytes()
    text = whole.decode()
    lock.write_text(text[:text.index(CUTS[cut]) + len(CUTS[cut])] if CUTS[cut] else "")
    (project / ".dvc/tmp/rwlock").write_text('{"write": {"a.txt": {"pid": 1, "cm')   # half-written
    refused = not readable(lock)
    assert refused == (cut in ("empty", "inside outs", "before second"))
    run = _wrapper(project)
    assert run.returncode == 0, run.stderr
    assert ("put back the last good copy" in run.stderr) == refused, run.stderr
    assert "removed .dvc/tmp/rwlock" in run.stderr
    assert lock.read_bytes() == whole
    assert (project / "b.txt").read_text() == "ab"


def test_a_readable_rwlock_is_left_to_dvc(tmp_path: Path):
    (tmp_path / ".dvc/tmp").mkdir(parents=True)
    rw = tmp_path / ".dvc/tmp/rwlock"
    rw.write_text('{"write": {}, "read": {}}')
    assert clear_broken_rwlock(tmp_path) is None and rw.exists()
    rw.write_text("{")
    assert "half-written" in clear_broken_rwlock(tmp_path) and not rw.exists()


def test_the_wrapper_refuses_a_params_file_dvc_would_crash_on(tmp_path: Path):
    (tmp_path / "params.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    run = _wrapper(tmp_path)
    assert run.returncode == 2 and "nested more than 64 levels" in run.stderr, run.stderr
