"""DVC's experiment queue on a one-stage repository: the wait fails in time with the logs when an
experiment hangs, and the filesystem broker's race, made certain, leaves an idle worker that
`dvc queue stop` ends (the recipe in docs/queue.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dvc_queue import CELERY, DvcQueue

from process_leaks import running

pytestmark = pytest.mark.pipeline

# dvc's queue workers are dvc_task TemporaryWorkers with timeout=10: every 10 s the idle monitor
# asks its worker what it holds (three inspect calls, 1 s each) and shuts it down on nothing.
MONITOR_PERIOD_S = 10.0
STEP = """\
import json, os, sys, time
import yaml
x = yaml.safe_load(open("params.yaml"))["x"]
if x < 0:
    with open(os.environ["HANG_PIDFILE"], "w") as fh:
        fh.write(str(os.getpid()))
    print("hanging on purpose", flush=True)
    time.sleep(3600)
json.dump({"y": 2 * x}, open("out.json", "w"))
"""
DVC_YAML = """\
stages:
  step:
    cmd: python step.py
    deps: [step.py]
    params: [x]
    metrics:
      - out.json:
          cache: false
"""


def _git(root: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.fixture
def queue(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    bindir = str(Path(sys.executable).parent)  # the workers are started as `dvc` from PATH
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    q = DvcQueue(root, env, [sys.executable, "-m", "dvc"])
    _git(root, env, "init", "-q")
    assert q.run("init", "-q").returncode == 0
    (root / "params.yaml").write_text("x: 1\n")
    (root / "step.py").write_text(STEP)
    (root / "dvc.yaml").write_text(DVC_YAML)
    assert q.run("repro", "-q").returncode == 0
    _git(root, env, "add", "-A")
    _git(root, env, "commit", "-qm", "one stage")
    try:
        yield q
    finally:
        q.stop()
        assert q.processes() == {}


def _queue(q: DvcQueue, *xs: int) -> None:
    for x in xs:
        proc = q.run("exp", "run", "--queue", "-S", f"x={x}")
        assert proc.returncode == 0, proc.stderr


def test_a_hung_experiment_fails_the_wait_in_time_with_the_logs(queue, tmp_path):
    pidfile = tmp_path / "hung.pid"
    _queue(queue, -1)
    queue.start(1, env={"HANG_PIDFILE": str(pidfile)})
    deadline = time.monotonic() + 120
    while not pidfile.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)  # the worker has taken the experiment, and its stage hangs
    assert pidfile.is_file(), queue.diagnosis("the experiment never started")
    t0 = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        queue.wait(expected=1, deadline_s=10)
    # the deadline, plus at most the last poll (5 s at most) and the diagnosis (one dvc command)
    waited = time.monotonic() - t0
    assert 10 <= waited < 10 + 60, waited
    message = str(failed.value)
    assert "not finished within 10 s; last seen: {" in message and ": 'running'}" in message
    assert f"--- {CELERY}/dvc-exp-worker-1.out" in message  # the worker's log, attached
    assert "hanging on purpose" in message  # the experiment's own log, attached
    hung = int(pidfile.read_text())
    assert running(hung) and queue.workers()
    # `dvc queue stop --kill` SIGKILLs the experiment's dvc process and orphans its stage, which
    # runs on until stop() kills what the queue started.
    killed = queue.stop()
    assert hung in killed and not running(hung) and queue.processes() == {}


def test_the_broker_race_leaves_idle_workers_that_dvc_queue_stop_ends(queue):
    _queue(queue, 2, 3)
    slow = str(Path(__file__).with_name("slow_broker"))
    path = os.pathsep.join(p for p in (slow, os.environ.get("PYTHONPATH")) if p)
    queue.start(2, env={"SLOW_BROKER_WRITES": "2", "PYTHONPATH": path})
    states = queue.wait(expected=2, deadline_s=180)
    drained = time.monotonic()
    assert sorted(states.values()) == ["success", "success"], states
    # Each worker's monitor dies on an empty reply, and nothing else shuts a worker down: past
    # the monitor's period after the queue drained, both workers are still there, idle.
    logs = [queue.root / CELERY / f"dvc-exp-worker-{n}.out" for n in (1, 2)]
    deadline = drained + 6 * MONITOR_PERIOD_S
    while time.monotonic() < deadline and not all(
            "JSONDecodeError" in log.read_text(errors="replace") for log in logs):
        time.sleep(1)
    time.sleep(max(0.0, drained + MONITOR_PERIOD_S + 5 - time.monotonic()))
    assert len(queue.workers()) == 2, queue.diagnosis("the race did not leave both workers")
    for log in logs:
        text = log.read_text(errors="replace")
        assert "(monitor)" in text and "JSONDecodeError" in text, text[-3000:]
        assert "shutting down due to empty queue" not in text
    # The remedy: `dvc queue stop` asks each worker to shut down; their main loops still answer.
    proc = queue.run("queue", "stop")
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 30
    while queue.processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert queue.processes() == {}, queue.diagnosis("dvc queue stop left processes running")
