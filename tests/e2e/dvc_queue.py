"""DVC's experiment queue driven from a test that can neither hang nor leave a worker behind.

`dvc queue start` forks its workers (dvc_task's ManagedProcess: a forked launcher that waits on
the worker) and the launcher keeps the command's stdout and stderr open. Started with its output
captured, `communicate()` then waits for as long as a worker lives, and a worker can live forever:
its idle monitor thread dies when it reads a broker message that kombu's filesystem transport has
created but not yet written (`JSONDecodeError: Expecting value`), and then nothing shuts it down
(docs/queue.md). So the queue is started with its output in a file, the experiments are polled
through `dvc exp show --json` against a deadline that fails with every log attached, and `stop`
ends every process the queue started, politely first. Those are found by a token in their
environment, which every one of them inherits from `dvc queue start`: a pid file's pid may name
a stranger by the time it is read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from process_leaks import carrying

EXPS = Path(".dvc/tmp/exps")
CELERY = EXPS / "celery"  # dvc-exp-worker-<n>.out / .pid: each worker's log and process id
RUNS = EXPS / "run"  # <task>/<task>.out / .pid: each experiment's log and process id
FINISHED = frozenset({"success", "failed"})
TOKEN = "INFONCE_LAB_DVC_QUEUE"


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"({exc})"
    return "\n".join(text[-lines:])


class DvcQueue:
    def __init__(self, root: Path, env: dict[str, str], dvc: Sequence[str]) -> None:
        self.root = root
        self.env = env
        self.dvc = list(dvc)
        self.token = uuid.uuid4().hex

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """A dvc command that starts no daemon: safe to capture."""
        return subprocess.run([*self.dvc, *args], cwd=self.root, env=self.env, text=True,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)

    def start(self, jobs: int, env: dict[str, str] | None = None) -> None:
        """``jobs`` workers, with ``env`` added to their environment (and their experiments')."""
        log = self.root / EXPS.parent / "queue-start.out"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:  # a file, never a pipe: the workers' launchers inherit it
            proc = subprocess.run([*self.dvc, "queue", "start", "-j", str(jobs)], cwd=self.root,
                                  env={**self.env, **(env or {}), TOKEN: self.token},
                                  stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=120)
        assert proc.returncode == 0, self.diagnosis(f"dvc queue start exited {proc.returncode}")

    def states(self, timeout: float = 60) -> dict[str, str]:
        """Each queued experiment's state (queued, running, success, failed), by name. Raises
        when `dvc exp show` fails (it can while a worker holds the repository's lock) or takes
        longer than ``timeout``: then SIGABRT makes Python's faulthandler print where each of
        its threads was, and that goes into the error."""
        proc = subprocess.Popen([*self.dvc, "exp", "show", "--json"], cwd=self.root,
                                env={**self.env, "PYTHONFAULTHANDLER": "1"}, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            try:
                _, err = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            raise RuntimeError(f"dvc exp show: no answer in {timeout:.0f} s; its threads "
                               f"were at (innermost call first):\n{err[:4000]}") from None
        if proc.returncode != 0:
            raise RuntimeError(f"dvc exp show exited {proc.returncode}: {err[-3000:]}")
        return {exp.get("name") or exp["revs"][0]["rev"]: exp["executor"]["state"]
                for baseline in json.loads(out)
                for exp in baseline.get("experiments") or [] if exp.get("executor")}

    def listed(self) -> dict[str, str]:
        """Each experiment's state as `dvc queue status` tables it, whatever its exit code: on a
        loaded machine the broker race of test_dvc_queue.py can make every `dvc exp show` and
        `dvc queue status` end in a JSONDecodeError, after the table is printed."""
        out = self.run("queue", "status").stdout
        rows = [line.split() for line in out.splitlines()]
        return {r[1]: r[-1].lower() for r in rows  # a task's row starts with its hex id
                if len(r) >= 4 and re.fullmatch(r"[0-9a-f]{7,}", r[0])}

    def wait(self, expected: int, deadline_s: float, poll_s: float = 3.0) -> dict[str, str]:
        """The states once ``expected`` experiments have finished; an AssertionError carrying
        the queue's logs once ``deadline_s`` has passed without that. No single poll may take
        more than a minute of the deadline (one `dvc exp show` once hung for all of it)."""
        end = time.monotonic() + deadline_s
        seen: object = "nothing yet"
        while True:
            try:
                states = self.states(timeout=min(max(end - time.monotonic(), 5.0), 60.0))
                seen = states
                if len(states) >= expected and FINISHED.issuperset(states.values()):
                    return states
            except RuntimeError as exc:
                seen = exc
                listed = self.listed()
                if len(listed) >= expected and FINISHED.issuperset(listed.values()):
                    return listed
            if time.monotonic() >= end:
                raise AssertionError(self.diagnosis(
                    f"{expected} queued experiments not finished within {deadline_s:.0f} s; "
                    f"last seen: {seen}"))
            time.sleep(min(poll_s, max(end - time.monotonic(), 0.0)))

    def processes(self) -> dict[int, str]:
        """Every running process the queue started (launchers, workers, experiments, stages):
        command lines by pid."""
        return carrying(TOKEN, self.token)

    def workers(self) -> dict[int, str]:
        return {pid: cmd for pid, cmd in self.processes().items() if "queue-worker" in cmd}

    def diagnosis(self, message: str, lines: int = 40) -> str:
        """``message``, then the queue's status, each worker's and experiment's log tail and the
        processes still running."""
        parts = [message]
        try:
            status = self.run("queue", "status", timeout=60)
            parts.append(f"$ dvc queue status (exit {status.returncode})\n"
                         f"{status.stdout}{status.stderr}")
        except subprocess.TimeoutExpired:
            parts.append("$ dvc queue status: no answer in 60 s")
        logs = [self.root / EXPS.parent / "queue-start.out",
                *sorted((self.root / CELERY).glob("*.out")),
                *sorted((self.root / RUNS).glob("*/*.out"))]
        parts += [f"--- {log.relative_to(self.root)} (last {lines} lines)\n{_tail(log, lines)}"
                  for log in logs if log.is_file()]
        parts.append("still running: " + ("".join(f"\n  {pid}: {cmd[:200]}" for pid, cmd
                                                  in self.processes().items()) or "nothing"))
        return "\n".join(parts)

    def stop(self, grace_s: float = 30.0) -> dict[int, str]:
        """`dvc queue stop --kill`: DVC asks every worker, idle or not, to shut down, then
        SIGKILLs each running experiment's dvc process, orphaning the stage command that process
        was running. Once the workers are gone (or ``grace_s`` has passed), SIGKILL to whatever
        the queue started that still runs. Returns those processes."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.run("queue", "stop", "--kill", timeout=60)
        end = time.monotonic() + grace_s
        while self.workers() and time.monotonic() < end:
            time.sleep(0.5)
        killed: dict[int, str] = {}
        end = time.monotonic() + 10  # SIGKILL lands asynchronously; a launcher may fork meanwhile
        while (left := self.processes()) and time.monotonic() < end:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed |= left
            time.sleep(0.1)
        return killed
