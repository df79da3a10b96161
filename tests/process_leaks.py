"""A pytest plugin: the test run fails when a process it started outlives it.

Every process the suite starts inherits the environment, so the process that owns the session
marks it with a variable of its own; after the session (xdist's workers already torn down), any
other live process still carrying the mark is a leftover — a daemon a test left behind (a DVC
queue worker, a server, a browser, a detached stage). They are listed, killed and the run's exit
status set to failed. Processes started with an environment built from scratch escape the
check; the suite's helpers all extend ``os.environ``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

MARK = "INFONCE_LAB_TEST_SESSION"
GRACE_S = 5.0  # for processes already on their way out (a browser closing, a killed stage)
_OWNER = pytest.StashKey[str]()


def running(pid: int) -> bool:
    """Alive: neither gone nor a zombie waiting for a parent that may never reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def carrying(variable: str, value: str) -> dict[int, str]:
    """Running processes other than this one whose environment holds ``variable=value``: their
    command lines, by pid. An environment names its process for good, where a pid is reused."""
    needle, me, found = f"{variable}={value}".encode(), os.getpid(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or not ours to read
            continue
        if running(int(entry.name)):
            found[int(entry.name)] = cmd.strip()
    return found


def pytest_configure(config: pytest.Config) -> None:
    if MARK not in os.environ:  # xdist workers and nested runs inherit it and own nothing
        os.environ[MARK] = value = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        config.stash[_OWNER] = value


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> object:
    result = yield
    value = session.config.stash.get(_OWNER, None)
    if value is None or not Path("/proc").is_dir():
        return result
    end = time.monotonic() + GRACE_S
    while (left := carrying(MARK, value)) and time.monotonic() < end:
        time.sleep(0.2)
    if left:
        report = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"{len(left)} process(es) started by the tests outlived them (killed now):",
                 *(f"  pid {pid}: {cmd[:300]}" for pid, cmd in left.items())]
        for line in lines:
            if report is not None:
                report.write_line(line, red=True, bold=True)
            else:
                print(line)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if session.exitstatus == pytest.ExitCode.OK:  # an interruption keeps its own status
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return result
