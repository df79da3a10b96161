"""The suite's leftover-process check (tests/process_leaks.py), run on a nested pytest session:
a test that leaves a detached process behind fails the run, names the process and kills it; a
test whose children all end passes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from process_leaks import MARK, running

LEAVES = """\
import subprocess, sys
def test_leaves_a_detached_sleeper(tmp_path_factory):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                            start_new_session=True, stdout=subprocess.DEVNULL)
    open({pidfile!r}, "w").write(str(proc.pid))
"""
WAITS = """\
import subprocess, sys
def test_waits_for_its_child():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5)"], check=True)
"""


def _session(folder: Path, test: str) -> subprocess.CompletedProcess:
    folder.mkdir()
    (folder / "test_inner.py").write_text(test)
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != MARK and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(Path(__file__).parent)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "process_leaks", "-q",
                           "-p", "no:cacheprovider", "test_inner.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_leftover_process_fails_the_run_and_is_killed(tmp_path):
    pidfile = tmp_path / "sleeper.pid"
    proc = _session(tmp_path / "leaves", LEAVES.format(pidfile=str(pidfile)))
    pid = int(pidfile.read_text())
    try:
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1, out  # its one test passed
        assert "1 passed" in out and "outlived them" in out, out
        assert f"pid {pid}:" in out and "time.sleep(300)" in out, out
        deadline = time.monotonic() + 10
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(pid)
    finally:
        if running(pid):
            os.kill(pid, 9)


def test_a_run_whose_children_end_passes(tmp_path):
    proc = _session(tmp_path / "waits", WAITS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "outlived" not in proc.stdout
