"""A stage whose parent (dvc) is SIGKILLed ends with it instead of writing on unrecorded
(``stage.exit_with_parent``: Linux's parent-death signal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the parent-death signal is Linux's")

CHILD = """
import sys, time
from infonce_lab.stage import exit_with_parent
if sys.argv[1] == "armed":
    exit_with_parent()
open(sys.argv[2], "w").write("started")
time.sleep(60)
"""

PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]])
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead to us: its state letter is Z
    stat = Path(f"/proc/{pid}/stat")
    return stat.is_file() and stat.read_text().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("mode", ["armed", "plain"])
def test_a_child_ends_with_its_killed_parent_only_when_armed(tmp_path: Path, mode: str) -> None:
    flag = tmp_path / "started"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, mode, str(flag)],
                              stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    deadline = time.time() + 30
    while not flag.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert flag.exists(), "the child never started"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 5
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    try:
        assert _alive(child) is (mode == "plain")
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
