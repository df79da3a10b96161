"""Atomic file and directory writes: a failed or killed stage never leaves half-written outputs."""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

KILL_AT_ENV = "INFONCE_LAB_KILL_AT"


def kill_point(name: str) -> None:
    """The fault suite's hook: ``INFONCE_LAB_KILL_AT=<name>`` SIGKILLs this process here, at a
    named point of a write (``rename``: a file written and fsynced, not yet renamed; ``swap``: a
    folder swap between its two renames; ``journal``: a stage's outputs staged and journaled,
    none renamed; ``commit``: the first of them renamed).
    ``<name>:<n>`` waits for the n-th time the point is reached. Unset, it costs one dict lookup."""
    want = os.environ.get(KILL_AT_ENV)
    if not want:
        return
    point, _, nth = want.partition(":")
    if point != name:
        return
    _KILL_COUNTS[name] = _KILL_COUNTS.get(name, 0) + 1
    if _KILL_COUNTS[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


_KILL_COUNTS: dict[str, int] = {}


def current_umask() -> int:
    """The process umask (``os.umask`` can only be read by setting it; it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def mkstemp_public(directory: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """``tempfile.mkstemp`` with the mode a plain ``open`` would give (0o666 less the umask):
    mkstemp makes its file 0o600, which the rename would carry onto every shared output."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=suffix)
    os.fchmod(fd, 0o666 & ~current_umask())
    return fd, name


def mkdtemp_public(directory: Path, prefix: str, suffix: str) -> Path:
    """``tempfile.mkdtemp`` with the mode ``mkdir`` would give (0o777 less the umask), not 0o700."""
    path = Path(tempfile.mkdtemp(dir=directory, prefix=prefix, suffix=suffix))
    path.chmod(0o777 & ~current_umask())
    return path


def fsync_dir(directory: str | Path) -> None:
    """Make a rename or a new entry in ``directory`` durable (POSIX: the directory's own fsync)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: str | Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


_RANDOM = r"[a-z0-9_]{8}"  # tempfile's random part: 8 of "a–z0–9_"


def _temporaries(path: Path) -> list[Path]:
    """``.<name>.<random>.tmp`` beside ``path``: the temporaries its writers make (mkstemp and
    mkdtemp), and nothing of a sibling (``.<name>.json.<random>.tmp`` belongs to name.json)."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.{_RANDOM}\.tmp")
    try:
        return [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]
    except FileNotFoundError:
        return []


def remove_stale_temporaries(path: Path) -> None:
    """Temporaries a killed writer of ``path`` left beside it. Two stages never write one output
    (DVC refuses overlapping outputs), so any found are a dead run's — unless an interrupted
    commit's journal names ``path``: that commit is finished first, its staged copy is not
    thrown away (and so a later recovery cannot overwrite what is written now)."""
    finish_interrupted_commits(target=path)
    for stale in _temporaries(path):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


STAGE_ROOTS = ("data", "models", "reports", ".resume")  # where stages write (relative to the repo)


def sweep_stale_temporaries(roots: tuple[str, ...] = STAGE_ROOTS) -> list[Path]:
    """Remove what killed writers left anywhere under ``roots`` — temporaries
    (``.<name>.<random>.tmp``) and a finished swap's ``.<name>.old`` (one whose ``<name>`` is
    missing is put back) — after finishing any journaled commit, which may own some of them.
    Every stage runs it first (``stage.stage``): DVC runs one stage at a time, so nothing found is
    in use — the caller makes sure of it (:func:`hold_stage_lock`: only when no other stage
    holds the lock). Returns what was removed or put back."""
    finish_interrupted_commits()
    pattern = re.compile(rf"\..+\.{_RANDOM}\.tmp")
    found: list[Path] = []
    for root in roots:
        if not Path(root).is_dir():
            continue
        for folder, dirs, files in os.walk(root):
            for name in [*dirs, *files]:
                if not name.startswith("."):
                    continue
                path = Path(folder) / name
                if pattern.fullmatch(name):
                    shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(
                        missing_ok=True)
                    found.append(path)
                elif name.endswith(".old") and len(name) > 5 and path.is_dir():
                    recover_swap(path.parent / name[1:-len(".old")])
                    found.append(path)
            dirs[:] = [d for d in dirs if not d.endswith((".tmp", ".old"))]
    return found


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a temporary file, fsynced, renamed, the rename fsynced — a
    kill or a power cut leaves the old file or the new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = mkstemp_public(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        kill_point("rename")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: str | Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _strict(obj: Any) -> Any:
    """NaN and ±inf become null: JSON has no such numbers (Python would write bare NaN, which
    DVC, pandas and browsers reject)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_strict(v) for v in obj]
    if isinstance(obj, (np.generic, np.ndarray)):
        return _strict(_jsonable(obj))
    return obj


def write_json_atomic(path: str | Path, obj: Any) -> None:
    text = json.dumps(_strict(obj), indent=2, sort_keys=True, default=_jsonable, allow_nan=False)
    write_text_atomic(path, text + "\n")


_SYSTEM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EACCES, errno.EPERM,
                            errno.EROFS, errno.EMFILE, errno.ENFILE, errno.ENOMEM})


class CorruptFileError(ValueError):
    """A file exists but cannot be read as what it should be (truncated, overwritten, edited)."""


@contextmanager
def reading(path: str | Path, what: str, fix: str) -> Iterator[None]:
    """Turn a reader's failure on a present file into one message naming the file, what it
    should be and what to do (``fix``), not the parser's traceback (a truncated checkpoint ends
    in ``KeyError: 174812789`` deep in torch's unpickler). A missing file stays
    FileNotFoundError, and disk errors stay OSError: neither says the file is bad."""
    try:
        yield
    except (FileNotFoundError, PermissionError, IsADirectoryError, MemoryError):
        raise
    except Exception as exc:  # every parser has its own exceptions; each means "not readable"
        if isinstance(exc, OSError) and exc.errno in _SYSTEM_ERRNOS:
            raise  # torch reports a bad archive as OSError EINVAL: that one is the file's fault
        raise CorruptFileError(f"{path}: not a readable {what} ({type(exc).__name__}: "
                               f"{str(exc)[:200] or 'no detail'}). {fix}") from exc


def read_json(path: str | Path) -> Any:
    with reading(path, "JSON file", "It was written by an earlier stage: re-run that stage "
                 "(`dvc repro -f <stage>`) or restore it (`git checkout -- <file>`)."):
        return json.loads(Path(path).read_text())


def recover_swap(path: Path) -> None:
    """Finish or undo a folder swap a kill interrupted (see :func:`atomic_dir`): ``.<name>.old``
    without ``<name>`` is the previous complete output, put back; beside ``<name>`` it is left
    over, removed. Then the dead run's temporaries are removed. A journaled commit of ``path``
    is finished first (:func:`finish_interrupted_commits`)."""
    finish_interrupted_commits(target=path)
    old = path.parent / f".{path.name}.old"
    if old.exists():
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(old, path)
    remove_stale_temporaries(path)


def _fsync_tree(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        for f in files:
            fsync_file(Path(folder) / f)
        fsync_dir(folder)


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary directory that replaces ``path`` only if the block succeeds.

    Until the swap, whatever was at ``path`` stays untouched; on an exception the temporary
    directory is removed and the old output survives. It is :func:`replaced_together` with one
    output: every file is fsynced, the swap is journaled, and a kill at any point of it is
    finished by the next stage that starts (or the next write of ``path``).
    """
    path = Path(path)
    key = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:12]
    with replaced_together(f"{path.name}-{key}") as outputs:
        yield outputs.dir(path)


def _swap_in(staged: Path, path: Path) -> None:
    """Two renames: ``path`` → ``.<name>.old``, ``staged`` → ``path`` (a folder cannot replace a
    non-empty one in one rename), then the old one is removed."""
    old = path.parent / f".{path.name}.old"
    if path.exists():
        os.replace(path, old)
        kill_point("swap")
    os.replace(staged, path)
    fsync_dir(path.parent)
    shutil.rmtree(old, ignore_errors=True)


def torch_write_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is torch.save's report of a write that came up short (a full disk)."""
    return isinstance(exc, RuntimeError) and any(
        m in str(exc) for m in ("unexpected pos", "file write failed"))


@contextmanager
def replace_atomic(path: str | Path) -> Iterator[Path]:
    """A temporary path for a writer that wants a file name (``torch.save``, ``np.savez``),
    fsynced and renamed onto ``path`` only if the block succeeds.

    The temporary file has ``path``'s own name, inside a temporary folder beside it: torch.save
    names the archive's records after the file, so the bytes (and DVC's hash) depend on the name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp_dir = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        try:
            yield tmp_dir / path.name
        except RuntimeError as exc:
            if not torch_write_failed(exc):
                raise
            # torch.save reports a short write (ENOSPC) with neither errno nor file name
            raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (torch.save: "
                          f"{str(exc)[-60:].strip()})", str(path)) from exc
        fsync_file(tmp_dir / path.name)
        kill_point("rename")
        os.replace(tmp_dir / path.name, path)
        fsync_dir(path.parent)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def save_npz_atomic(path: str | Path, **arrays: np.ndarray) -> None:
    with replace_atomic(path) as tmp:
        np.savez(tmp, **arrays)


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


SHA256_SUFFIX = ".sha256"


def write_checksum(path: str | Path) -> str:
    """Record ``path``'s SHA-256 beside it (``<name>.sha256``, ``sha256sum -c`` format); return
    it. Readers verify it before loading (:func:`verify_checksum`): a flipped byte in a weight
    tensor loads without complaint otherwise."""
    path = Path(path)
    digest = sha256_file(path)
    write_text_atomic(path.with_name(path.name + SHA256_SUFFIX), f"{digest}  {path.name}\n")
    return digest


def verify_checksum(path: str | Path, fix: str) -> None:
    """Raise CorruptFileError unless ``path`` matches the digest recorded beside it."""
    path = Path(path)
    sidecar = path.with_name(path.name + SHA256_SUFFIX)
    if not sidecar.is_file():
        raise CorruptFileError(f"{path}: no {sidecar.name} beside it, so it cannot be checked "
                               f"(written by an earlier version, or copied alone). {fix}")
    expected = sidecar.read_text().split(maxsplit=1)[0] if sidecar.read_text().strip() else ""
    actual = sha256_file(path)
    if actual != expected:
        raise CorruptFileError(f"{path}: SHA-256 {actual[:12]}… differs from the "
                               f"{expected[:12] or 'empty'}… recorded when it was written "
                               f"(changed or damaged since). {fix}")


# ------------------------------------------------------------------ one stage's outputs together
JOURNAL_DIR = Path(".journal")


class Staging:
    """The outputs of one stage, written beside their targets and renamed into place together
    (:func:`replaced_together`)."""

    def __init__(self) -> None:
        self.entries: list[tuple[Path, Path, bool]] = []  # (target, staged folder, is a file)

    def dir(self, path: str | Path) -> Path:
        """A fresh folder that replaces the folder ``path``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        recover_swap(path)
        staged = mkdtemp_public(path.parent, prefix=f".{path.name}.", suffix=".tmp")
        self.entries.append((path, staged, False))
        return staged

    def file(self, path: str | Path) -> Path:
        """A path to write that replaces the file ``path``. It has ``path``'s own name, in a
        temporary folder beside it (torch.save names an archive's records after its file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path)
        staged = mkdtemp_public(path.parent, prefix=f".{path.name}.", suffix=".tmp")
        self.entries.append((path, staged, True))
        return staged / path.name

    def json(self, path: str | Path, obj: Any) -> None:
        write_json_atomic(self.file(path), obj)

    def text(self, path: str | Path, text: str) -> None:
        write_text_atomic(self.file(path), text)

    def json_dir(self, path: str | Path, records: dict[str, Any]) -> None:
        """The folder ``path`` as one ``<name>.json`` per entry."""
        out = self.dir(path)
        for name, obj in records.items():
            write_json_atomic(out / f"{name}.json", obj)

    def discard(self) -> None:
        for _, staged, _ in self.entries:
            shutil.rmtree(staged, ignore_errors=True)


def _apply(target: Path, staged: Path, is_file: bool) -> None:
    """Rename one staged output into place; a no-op when it already is (recovery re-runs it)."""
    if not staged.exists():
        shutil.rmtree(target.parent / f".{target.name}.old", ignore_errors=True)
        return
    if is_file:
        if (staged / target.name).exists():
            os.replace(staged / target.name, target)
            fsync_dir(target.parent)
        shutil.rmtree(staged, ignore_errors=True)
    else:
        old = target.parent / f".{target.name}.old"
        if old.exists() and target.exists():
            shutil.rmtree(old)  # the previous run's leftover, or ours half-removed
        _swap_in(staged, target)


def _journal_entries(root: Path, entries: list[tuple[Path, Path, bool]]) -> dict[str, Any]:
    def rel(p: Path) -> str:
        return os.path.relpath(p.absolute(), root.absolute())
    return {"format": 1, "entries": [{"target": rel(t), "staged": rel(s), "file": f}
                                     for t, s, f in entries]}


def _read_journal(journal: Path) -> list[dict[str, Any]]:
    """A journal's entries, each checked to be what :func:`_journal_entries` writes: a target
    inside the workspace and its staged copy beside it (``.<name>.<random>.tmp``). Written
    atomically, a journal cannot be half there; one that is not this (edited by hand, or
    another file under that name) would rename arbitrary paths, so it is refused, not guessed."""
    problem = None
    try:
        blob = json.loads(journal.read_text())
        entries = blob["entries"] if blob.get("format") == 1 else None
        if not isinstance(entries, list) or not entries:
            problem = "no list of entries"
        for e in entries or []:
            target, staged = PurePosixPath(e["target"]), PurePosixPath(e["staged"])
            if (not isinstance(e["file"], bool) or target.is_absolute() or ".." in target.parts
                    or staged.parent != target.parent
                    or not re.fullmatch(rf"\.{re.escape(target.name)}\..+\.tmp", staged.name)):
                problem = f"entry {e!r} is not an output and its staged copy beside it"
                break
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        problem = "not a journal this package writes"
    if problem:
        raise CorruptFileError(f"{journal}: an interrupted commit's journal that cannot be used "
                               f"({problem}). Delete it and re-run the stage (`dvc repro -f "
                               "<stage>`).")
    return entries


def finish_interrupted_commits(journal_dir: Path = JOURNAL_DIR,
                               target: Path | None = None) -> list[str]:
    """Roll forward every commit a kill interrupted: a journal exists only once all of its
    outputs were staged complete and fsynced, so renaming the rest into place finishes it (a
    kill before the journal leaves only temporaries, removed by the next write). Returns the
    journals finished. Idempotent: a kill during recovery is recovered the same way. With
    ``target``, only the journals that name it (what a writer of ``target`` may finish while
    other stages run: none of them writes ``target``); without, all of them, which only a stage
    that holds the workspace lock alone may do (:func:`hold_stage_lock`)."""
    done: list[str] = []
    if not journal_dir.is_dir():
        return done
    root = journal_dir.absolute().parent
    for journal in sorted(journal_dir.glob("*.json")):
        entries = _read_journal(journal)
        if target is not None and not any(
                (root / e["target"]).absolute() == Path(target).absolute() for e in entries):
            continue
        for e in entries:
            _apply(root / e["target"], root / e["staged"], bool(e["file"]))
        journal.unlink()
        fsync_dir(journal_dir)
        done.append(journal.stem)
    return done


@contextmanager
def replaced_together(name: str | None = None,
                      journal_dir: Path = JOURNAL_DIR) -> Iterator[Staging]:
    """Stage several outputs of one stage and rename them into place together.

    Inside the block each output is written to a temporary beside its target
    (:meth:`Staging.dir`, :meth:`Staging.file`); nothing visible changes, and an exception removes
    them. After the block every staged file is fsynced, then a journal
    (``.journal/<name>.json``: target → staged, fsynced) is written, then the renames run and the
    journal is removed. A kill before the journal leaves every old output in place; a kill after
    it is finished by :func:`finish_interrupted_commits`, which every stage runs first
    (``stage.stage``). Either way the outputs are all old or all new.
    """
    staging = Staging()
    try:
        yield staging
        for target, staged, is_file in staging.entries:
            if not (staged / target.name if is_file else staged).exists():
                # Removed under us (by hand, or a sweep that should not have run): committing
                # the rest would mix old and new outputs.
                raise RuntimeError(f"{staged}: the staged copy of {target} disappeared before "
                                   "the commit; nothing was replaced. Run the stage again.")
            _fsync_tree(staged)
        for parent in {staged.parent for _, staged, _ in staging.entries}:
            fsync_dir(parent)  # the staged folders' own entries, before the journal names them
    except BaseException:
        staging.discard()
        raise
    entries = staging.entries
    if not journal_dir.is_dir():
        journal_dir.mkdir(parents=True, exist_ok=True)
        fsync_dir(journal_dir.absolute().parent)
    journal = journal_dir / f"{name or os.environ.get('DVC_STAGE') or 'stage'}.json"
    write_json_atomic(journal, _journal_entries(journal_dir.absolute().parent, entries))
    kill_point("journal")
    for i, (target, staged, is_file) in enumerate(entries):
        _apply(target, staged, is_file)
        if i == 0:
            kill_point("commit")
    journal.unlink()
    fsync_dir(journal_dir)


_STAGE_LOCK: dict[str, int] = {}  # this process's open lock files (held until it exits)


def hold_stage_lock(journal_dir: Path = JOURNAL_DIR) -> bool:
    """Join the stages running in this workspace; True when this one runs alone.

    DVC releases its repository lock while a stage's command runs, so two ``dvc repro`` of
    unrelated stages (or a cluster's jobs on one shared checkout) do run at once. Every stage
    holds a shared ``flock`` on the workspace folder until it exits (the kernel releases it on any
    death, SIGKILL included). Only a stage that gets it exclusively — no other stage running —
    finishes every interrupted commit and sweeps the leftovers; then it holds it shared like the
    others. Returns whether it was alone (the caller recovers only then)."""
    import fcntl

    # The workspace folder itself is locked (Linux flocks a directory opened read-only): no
    # lock file to create, and its inode never changes, whatever replaces files inside it.
    key = str(journal_dir.absolute().parent)
    if key not in _STAGE_LOCK:  # one open file per process: a second would conflict with it
        _STAGE_LOCK[key] = os.open(key, os.O_RDONLY)
    fd = _STAGE_LOCK[key]
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        alone = True
    except BlockingIOError:
        alone = False
    if not alone:
        fcntl.flock(fd, fcntl.LOCK_SH)
    return alone


def share_stage_lock() -> None:
    """After the recovery that :func:`hold_stage_lock` allowed: let other stages start."""
    import fcntl

    for fd in _STAGE_LOCK.values():
        fcntl.flock(fd, fcntl.LOCK_SH)
