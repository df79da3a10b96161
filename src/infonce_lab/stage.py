"""What every stage script shares: load and validate params first, turn known errors into a
one-paragraph message and a non-zero exit instead of a traceback."""

from __future__ import annotations

import copy
import functools
import os
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from infonce_lab.io import (
    finish_interrupted_commits,
    hold_stage_lock,
    share_stage_lock,
    sweep_stale_temporaries,
    torch_write_failed,
    write_json_atomic,
)
from infonce_lab.params import ConfigError, Params, load_raw, parse_params, read_yaml
from infonce_lab.params.footprint import check_memory
from infonce_lab.params.work import check_work, stage_counts

F = TypeVar("F", bound=Callable[..., Any])

PARAMS_FILE = "params.yaml"
TIMINGS_DIR = Path("reports/timings")


def stage_app() -> Any:
    """A stage script's command line, in click's plain conventions: ``--help`` prints the
    command's help (the script's docstring, ``@app.command(help=__doc__)``) and each option's,
    without a type column; no shell-completion options."""
    import typer

    return typer.Typer(add_completion=False, rich_markup_mode=None)


def params_or_exit(path: str = PARAMS_FILE) -> Params:
    """The validated params, or exit 2 with the dotted key. Under ``dvc repro`` the stage's own
    memory estimate is held against the machine too (``params.footprint``); by hand, and in the
    check_params stage, every stage's. Inside a stage (``stage.stage``), valid params then let it
    finish what killed stages left (:func:`recover_alone`): bad input creates nothing."""
    try:
        raw = load_raw(path)   # one reading: what is validated is what is compared at the end
        params = parse_params(copy.deepcopy(raw), path)
        _READ[:] = [(Path(path), raw, params)]
        stage_name = os.environ.get("DVC_STAGE")
        this = None if stage_name in (None, "", "check_params") else stage_name
        check_memory(params, this)
        check_work(params, TIMINGS_DIR, this)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if _RECOVER[0]:
        _RECOVER[0] = False
        recover_alone()
    return params


_RECOVER = [False]  # set by stage.stage: the stage recovers once its params are valid
_READ: list[tuple[Path, Any, Params]] = []  # the params file this process read: what it held


def changed_keys(old: Any, new: Any, at: str = "") -> list[str]:
    """The dotted keys whose values differ between two readings of a params file."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [k for key in sorted(set(old) | set(new), key=str)
                for k in changed_keys(old.get(key), new.get(key), f"{at}.{key}" if at else str(key))]
    return [] if old == new and type(old) is type(new) else [at or "(the file)"]


def params_unchanged_or_exit() -> None:
    """Exit 2 when the params file this stage read changed while it ran. DVC records the
    params a stage depends on from the file as it is when the stage *ends*: an edit made meanwhile
    would be recorded as what ran, and the next ``dvc repro`` would find nothing to redo. A failed
    stage is recorded as nothing, so the next run redoes it with the file as it is then."""
    if not _READ:
        return
    path, before, _ = _READ[0]
    try:
        now = read_yaml(path)
    except Exception as exc:  # noqa: BLE001 - removed, or half-saved by an editor: changed
        now = f"unreadable ({exc})"
    keys = changed_keys(before, now)
    if keys and (listed := stage_params(os.environ.get("DVC_STAGE"), path)) is not None:
        keys = [k for k in keys if k == "(the file)" or any(
            k == p or k.startswith(f"{p}.") or p.startswith(f"{k}.") for p in listed)]
    if keys:
        shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        fail(f"{path} changed while this stage ran ({shown}): its outputs were computed with the "
             "values it read when it started, which DVC would record as the new ones. Nothing "
             "is recorded for this stage; run dvc repro again to redo it with the file as it is")


def stage_params(name: str | None, path: Path) -> list[str] | None:
    """The keys of ``path`` that DVC records for stage ``name`` (its ``params:`` in dvc.yaml, as
    DVC expands them); None — every key counts — when not under DVC, when DVC cannot say, or
    when the stage depends on the whole file (a plain dep, as check_params has, or a params
    entry without keys). Asked only once the file has changed: an edit to a key the stage does
    not list changes nothing DVC records for it, and must not throw away finished work."""
    if not name:
        return None
    try:
        from dvc.dependency.param import ParamsDependency
        from dvc.repo import Repo

        keys: list[str] = []
        with Repo() as repo:
            for dep in (d for st in repo.stage.collect(name) for d in st.deps):
                if Path(dep.fs_path).resolve() != path.resolve():
                    continue
                if not isinstance(dep, ParamsDependency) or not dep.params:
                    return None
                keys += dep.params
        return keys
    except Exception:  # noqa: BLE001 - DVC could not say: every changed key counts
        return None


def fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def stage_instance(**given: str | None) -> dict[str, str]:
    """The names a stage instance works on: the flags given by hand, the rest from ``DVC_STAGE``.

    dvc.yaml's commands hold no ``${…}``: DVC runs them in a shell, and a value substituted from
    params (a study name, the launcher) would run before any validation. The instance's names
    reach the stage through the name DVC gives the instance instead (``pretrain@<d>-<b>-<l>-<s>``,
    the matrix values joined by ``-``, which a name cannot hold), never through a shell; the
    stage then checks each against params.yaml like a flag typed by hand.
    """
    missing = [k for k, v in given.items() if v is None]
    if not missing:
        return {k: v for k, v in given.items() if v is not None}
    dvc_stage = os.environ.get("DVC_STAGE", "")
    _, sep, suffix = dvc_stage.partition("@")
    flags = " ".join(f"--{k.replace('_', '-')}" for k in missing)
    if not sep:
        fail(f"give {flags} (or run the stage through dvc repro, which names the instance)")
    parts = suffix.split("-")
    if len(parts) != len(given):
        fail(f"DVC stage {dvc_stage!r}: expected {len(given)} names joined by '-' "
             f"({', '.join(given)}); a name under params.yaml cannot hold '-'")
    return {k: v if v is not None else part for (k, v), part in zip(given.items(), parts,
                                                                     strict=True)}


def unexpected_error(exc: BaseException) -> str:
    """One paragraph for an error no check anticipated: what, where, what to do."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f" writing or reading {exc.filename}" if exc.filename else ""
        return (f"{exc.strerror}{where} (OSError {exc.errno}). Free space or fix permissions, "
                "then re-run: the previous outputs are still in place.")
    if torch_write_failed(exc):
        # torch.save reports a full disk (ENOSPC) this way, with no file name or errno; the
        # writers that go through io.replace_atomic turn it into an OSError naming the file.
        return (f"a write failed ({str(exc)[-60:].strip()}): most likely the disk is full. Free "
                "space, then re-run: the previous outputs are still in place (every output is "
                "written to a temporary and renamed only when complete).")
    frames = traceback.extract_tb(exc.__traceback__)
    at = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return (f"unexpected {type(exc).__name__}{at}: {str(exc)[:300] or 'no detail'}. Nothing was "
            "replaced: the previous outputs are still in place. Set INFONCE_LAB_DEBUG=1 for the "
            "traceback (and report it if the input looks right).")


def process_seconds() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere): the stage's work plus
    the interpreter start and imports that a stage pays before ``main`` runs."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return max(0.0, time.time() - (boot + ticks / os.sysconf("SC_CLK_TCK")))


def record_timing(name: str, seconds: float, directory: Path = TIMINGS_DIR) -> Path:
    """``reports/timings/<stage>.json`` (``<stage>`` is DVC's name, e.g. ``pretrain@<run>``): the
    provenance that the report's stage-time table reads; a declared output of every stage."""
    path = directory / f"{name}.json"
    total = process_seconds()
    write_json_atomic(path, {
        "stage": name, "seconds": round(seconds, 3),
        "process_seconds": None if total is None else round(max(total, seconds), 3),
        "finished": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host_cpus": os.cpu_count(),
        # the counts its work grew with, which later estimates scale (params/work.py)
        "work": stage_counts(_READ[0][2], name) if _READ else {}})
    return path


def recover_alone() -> None:
    """What killed stages left — a commit half renamed, temporaries, a swap's old copy — is
    finished or removed by the next stage that starts while no other stage runs
    (``io.hold_stage_lock``); with others running it is left for a later one."""
    if hold_stage_lock():
        for name in finish_interrupted_commits():
            print(f"finished the outputs of {name}, which a kill interrupted while it renamed "
                  "them into place", file=sys.stderr)
        for path in sweep_stale_temporaries():
            print(f"removed {path}, left by a killed stage", file=sys.stderr)
    share_stage_lock()


def exit_with_parent() -> None:
    """End this process (SIGTERM) when the one that started it dies — Linux's parent-death
    signal. Under ``dvc repro`` a SIGKILLed dvc otherwise leaves its stage running, writing
    outputs no lock will record. Elsewhere (macOS, Windows) nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    parent = os.getppid()
    pr_set_pdeathsig = 1   # <linux/prctl.h>
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:   # it died before the signal was armed
        os.kill(os.getpid(), signal.SIGTERM)


def stage(fn: F | None = None, *, timed: bool = True, announce: bool = True,
          recover: bool = True) -> Any:
    """Decorate a Typer command: report expected failures cleanly and time the stage.

    Under ``dvc repro`` (DVC sets ``DVC_STAGE`` to the stage's name) a successful run also writes
    its wall time to ``reports/timings/<stage>.json`` unless ``timed=False`` (the report, which
    reads that folder); ``announce=False`` drops the closing "done in" line (the user-facing
    ``infonce-lab`` commands); ``recover=False`` leaves killed stages' leftovers alone (those
    commands, which are no stage). Set ``INFONCE_LAB_DEBUG=1`` to see the traceback behind an error message.
    """
    if fn is None:
        return functools.partial(stage, timed=timed, announce=announce, recover=recover)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        if os.environ.get("DVC_STAGE"):
            exit_with_parent()
        try:
            # After the params are validated (params_or_exit): bad input creates nothing.
            _RECOVER[0] = recover and (os.environ.get("RANK") or "0") == "0"  # one per group
            _READ.clear()   # what this call reads (a process may run several, as tests do)
            out = fn(*args, **kwargs)
        except (ConfigError, FileNotFoundError, FloatingPointError, ValueError) as exc:
            # ValueError includes io.CorruptFileError: a bad file named with what to do.
            if os.environ.get("INFONCE_LAB_DEBUG"):
                traceback.print_exc()
            fail(str(exc))
        except Exception as exc:  # noqa: BLE001 - the one place that turns the rest into a message
            if os.environ.get("INFONCE_LAB_DEBUG"):
                traceback.print_exc()
            fail(unexpected_error(exc), code=1)
        params_unchanged_or_exit()
        seconds = time.perf_counter() - t0
        if timed and os.environ.get("DVC_STAGE") and (os.environ.get("RANK") or "0") == "0":
            record_timing(os.environ["DVC_STAGE"], seconds)
        if announce:
            print(f"[{fn.__module__}] done in {seconds:.1f}s", file=sys.stderr)
        return out

    return wrapper  # type: ignore[return-value]
