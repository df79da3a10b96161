"""Keep ``dvc.lock`` readable and to the stages ``dvc.yaml`` defines now.

``python -m infonce_lab.devtools.lock`` (``make repro`` runs it before ``dvc repro``):

* **A lock a kill broke is restored.** DVC rewrites the whole of ``dvc.lock`` in place after
  every stage; a kill in that ≈ 0.2 s leaves it empty or cut, and a cut that DVC's schema
  refuses makes every later ``dvc repro`` refuse. The last lock that DVC's own schema accepted
  is kept in ``.dvc/tmp/dvc.lock.good`` and put back over such a file; the stages the killed run
  finished after it are then restored from DVC's run cache (or re-run), with the same outputs.
  A cut the schema accepts (between whole fields) is left to DVC, which does the same.
* **A half-written ``.dvc/tmp/rwlock``** (DVC's record of which stage holds which path, written
  in place too) is removed when no DVC process holds the repository, with a message; DVC itself
  only says the file is corrupted and leaves it to be deleted by hand.
* **Stale entries are dropped.** DVC keeps the lock entries of stage instances that no longer
  exist (a removed seed, a removed stage kind) and re-reads and re-writes the whole file after
  every stage it runs, so they cost time on every stage of every later run.

``python -m infonce_lab.devtools.lock repro [dvc repro options]`` validates params.yaml first
(DVC's own reader crashes on a file nested 100,000 levels deep), does the same, runs
``dvc repro`` and keeps the lock it leaves: the wrapper for plain ``dvc repro``. DVC's own YAML
reader and writer keep the file in the format DVC writes.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

GOOD = Path(".dvc/tmp/dvc.lock.good")


def current_stages(root: Path) -> list[str]:
    """The stage instances dvc.yaml defines (``foreach``/``matrix`` expanded), DVC's names."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        return [s.addressing for s in repo.index.stages]


def prune(lock: Path, keep: list[str]) -> list[str]:
    """Remove every stage entry of ``lock`` not in ``keep``; returns the removed names. The file
    is rewritten (atomically, by DVC's writer) only when something is removed."""
    from dvc.utils.serialize import dump_yaml, load_yaml

    if not lock.is_file():
        return []
    data = load_yaml(str(lock))
    stages = data.get("stages", {})
    stale = [name for name in stages if name not in set(keep)]
    if stale:
        for name in stale:
            del stages[name]
        tmp = lock.with_name(f".{lock.name}.tmp")
        dump_yaml(str(tmp), data)
        tmp.replace(lock)
    return stale


def readable(lock: Path) -> bool:
    """Whether DVC would read ``lock``: YAML that its lock-file schema accepts."""
    from dvc.schema import COMPILED_LOCKFILE_SCHEMA
    from dvc.utils.serialize import load_yaml

    try:
        data = load_yaml(str(lock))
        COMPILED_LOCKFILE_SCHEMA(data)
    except Exception:  # noqa: BLE001 - any reading DVC would refuse
        return False
    return isinstance(data, dict) and isinstance(data.get("stages"), dict)


def keep_or_restore(root: Path) -> str | None:
    """Keep a copy of a readable ``dvc.lock``, or put the last one back over a broken one;
    returns what was done when it was a restore."""
    lock, good = root / "dvc.lock", root / GOOD
    if not lock.is_file():
        return None
    if readable(lock):
        good.parent.mkdir(parents=True, exist_ok=True)
        tmp = good.with_name(good.name + ".tmp")
        shutil.copyfile(lock, tmp)
        tmp.replace(good)
        return None
    if not good.is_file():
        return (f"{lock.name} is broken (a kill while DVC rewrote it?) and no good copy was "
                "kept: restore it with `git checkout dvc.lock` (DVC then re-runs or restores "
                "from its run cache what changed since)")
    broken = lock.with_name(lock.name + ".broken")
    shutil.copyfile(lock, broken)
    tmp = lock.with_name(f".{lock.name}.tmp")
    shutil.copyfile(good, tmp)
    tmp.replace(lock)
    return (f"{lock.name} was broken (a kill while DVC rewrote it): put back the last good copy "
            f"({GOOD}); the broken one is in {broken.name}. DVC restores from its run cache, "
            "or re-runs, the stages finished after it")


def _repository_busy(root: Path) -> bool:
    """Whether a DVC process holds the repository (DVC's own lock file, zc.lockfile)."""
    import zc.lockfile

    path = root / ".dvc/tmp/lock"
    if not path.is_file():
        return False
    try:
        zc.lockfile.LockFile(str(path)).close()
    except zc.lockfile.LockError:
        return True
    return False


def clear_broken_rwlock(root: Path) -> str | None:
    """Remove ``.dvc/tmp/rwlock`` when DVC could not read it and no DVC process runs; returns
    the message. A readable one is left to DVC, which skips the entries of dead processes."""
    from dvc.rwlock import SCHEMA

    path = root / ".dvc/tmp/rwlock"
    if not path.is_file():
        return None
    try:
        SCHEMA(json.loads(path.read_text(encoding="utf-8")))
        return None
    except Exception:  # noqa: BLE001 - not JSON, or not DVC's format: DVC refuses it
        pass
    if _repository_busy(root):
        return None
    path.unlink()
    return (f"removed {path.relative_to(root)}: half-written (a kill while DVC recorded which "
            "stage held which path), and no DVC process is running")


def guard(root: Path) -> list[str]:
    """Everything this module does before a run; the messages of what it changed."""
    said = [m for m in (clear_broken_rwlock(root), keep_or_restore(root)) if m]
    if (root / "dvc.lock").is_file() and not readable(root / "dvc.lock"):
        raise SystemExit(f"error: {said[-1]}")
    removed = prune(root / "dvc.lock", current_stages(root))
    if removed:
        keep_or_restore(root)
    said.append(f"dvc.lock: {len(removed)} stale stage entr{'y' if len(removed) == 1 else 'ies'} "
                "removed")
    return said


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)   # DVC itself stops on Ctrl-C as usual


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    root = Path(".")
    if args[:1] != ["repro"]:
        root = Path(args[0]) if args else root
    if args[:1] == ["repro"] and (root / "params.yaml").is_file():
        # Before DVC reads params.yaml: a file nested deep enough overflows DVC's YAML reader
        # (a segmentation fault); every refusal names its key instead.
        from infonce_lab.params import ConfigError, load_params

        try:
            load_params(root / "params.yaml")
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    for message in guard(root):
        print(message, file=sys.stderr)
    if args[:1] != ["repro"]:
        return 0
    dvc = Path(sys.executable).with_name("dvc")
    # Ctrl-C reaches DVC too (one process group): this wrapper waits for DVC's own shutdown,
    # which releases its locks, where subprocess.call would kill it 0.25 s into it.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = subprocess.Popen([str(dvc) if dvc.exists() else "dvc", "repro", *args[1:]],
                                preexec_fn=_default_sigint).wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    keep_or_restore(root)
    return code


if __name__ == "__main__":
    sys.exit(main())
