from __future__ import annotations

import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
# The run fails when a process a test started outlives the session (tests/process_leaks.py).
pytest_plugins = ["process_leaks"]
_FILE_SECONDS: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _FILE_SECONDS[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The slowest test files, so that the suite's budget shows in every log (with xdist's
    --dist loadfile a file is the unit a worker runs)."""
    if not _FILE_SECONDS:
        return
    terminalreporter.section("slowest test files (setup + call + teardown)")
    for name, seconds in sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1])[:12]:
        terminalreporter.write_line(f"{seconds:8.1f} s  {name}")
    terminalreporter.write_line(f"{sum(_FILE_SECONDS.values()):8.1f} s  summed over "
                                f"{len(_FILE_SECONDS)} files (workers run them side by side)")


@pytest.fixture(autouse=True)
def _two_threads() -> None:
    torch.set_num_threads(2)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def copy_worktree() -> Callable[..., Path]:
    """``copy_worktree(dest, skip=())``: the files a clone of this working tree would hold
    (tracked, and untracked but not ignored: no .venv, no DVC outputs), less those whose path
    starts with one of ``skip``."""

    def copy(dest: Path, skip: tuple[str, ...] = ()) -> Path:
        from infonce_lab.devtools.smoke import copy_worktree as copy_tree

        return copy_tree(REPO, dest, skip)

    return copy


@pytest.fixture(scope="session")
def digits_splits():
    from infonce_lab.data.readers import READERS
    from infonce_lab.params import DigitsDataset

    return READERS["digits"].read(DigitsDataset(), Path("data/downloads"))


@pytest.fixture(scope="session")
def _params_mapping(repo_root):
    import yaml

    return yaml.safe_load((repo_root / "params.yaml").read_text())


@pytest.fixture()
def raw(_params_mapping):
    """params.yaml as a plain mapping, to break in one place per test: a fresh deep copy of one
    reading per session (PyYAML's pure-Python reader takes ≈ 40 ms a read, on hundreds of
    tests)."""
    import copy

    return copy.deepcopy(_params_mapping)


@pytest.fixture()
def config_error():
    """``config_error(raw) -> message``: the ConfigError that parsing ``raw`` must raise."""
    from infonce_lab.params import ConfigError, parse_params

    def error(raw: dict) -> str:
        with pytest.raises(ConfigError) as exc:
            parse_params(raw)
        return str(exc.value)

    return error


def _kill_after_state(cmd: list[str], cwd: Path, env: dict[str, str], state_file: Path,
                      min_step: int, seconds: float = 240) -> None:
    """Start a training stage and SIGKILL it (no chance to clean up) once its resume state has
    reached ``min_step`` and its digest is written beside it; fails when the run ends first."""
    from infonce_lab.io import verify_checksum

    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        if state_file.is_file():
            try:
                verify_checksum(state_file, "")
                step = torch.load(state_file, weights_only=True)["step"]
            except Exception:  # noqa: BLE001 - mid-rename, or its digest not yet written
                step = 0
            if step >= min_step:
                break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed; make it longer"
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.fixture
def kill_after_state() -> Callable[..., None]:
    return _kill_after_state
