"""Atomic file and directory writes: a failed or killed stage never leaves half-written outputs."""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np


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


def remove_stale_temporaries(path: Path) -> None:
    """Temporaries a killed writer of ``path`` left beside it (``.<name>.*.tmp``). Writers of one
    output never run at once (DVC locks the repository), so any found are a dead run's."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


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
    over, removed. Then the dead run's temporaries are removed."""
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
    directory is removed and the old output survives. Every file is fsynced before the swap, and
    the swap is two renames (``path`` → ``.<name>.old``, temporary → ``path``): a kill between
    them leaves the old output complete under ``.<name>.old``, which the next write of ``path``
    (or :func:`recover_swap`) puts back or removes.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    recover_swap(path)
    tmp = mkdtemp_public(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        yield tmp
        _fsync_tree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = path.parent / f".{path.name}.old"
    if path.exists():
        os.replace(path, old)
    os.replace(tmp, path)
    fsync_dir(path.parent)
    shutil.rmtree(old, ignore_errors=True)


def write_json_dir(path: str | Path, records: dict[str, Any]) -> None:
    """Replace the folder ``path`` by one ``<name>.json`` per entry, all or nothing."""
    with atomic_dir(path) as out:
        for name, obj in records.items():
            write_json_atomic(out / f"{name}.json", obj)


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
        yield tmp_dir / path.name
        fsync_file(tmp_dir / path.name)
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
