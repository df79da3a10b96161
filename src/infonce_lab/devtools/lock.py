"""Keep ``dvc.lock`` to the stages ``dvc.yaml`` defines now.

DVC keeps the lock entries of stage instances that no longer exist (a removed seed, a removed
stage kind), and re-reads and re-writes the whole file after every stage it runs, so stale
entries cost time on every stage of every later run. ``python -m infonce_lab.devtools.lock``
drops them (``make repro`` runs it first); DVC's own YAML reader and writer keep the file in the
format DVC writes.
"""

from __future__ import annotations

import sys
from pathlib import Path


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


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0] if argv else ".")
    removed = prune(root / "dvc.lock", current_stages(root))
    print(f"dvc.lock: {len(removed)} stale stage entr{'y' if len(removed) == 1 else 'ies'} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
