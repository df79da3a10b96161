"""Published dataset archives: fetched over https against their pins, extracted once, safely.

:class:`Archive` is one published file with its pins; :func:`download_and_extract` fetches a
dataset's archives with :func:`infonce_lab.data.fetch.fetch` and extracts them, refusing any member
that would land outside the dataset's folder, a link or a device.
"""

from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from infonce_lab.data.fetch import DownloadError, fetch
from infonce_lab.io import atomic_dir, read_json, write_json_atomic


@dataclass(frozen=True)
class Archive:
    url: str
    filename: str
    md5: str | None     # the publisher's (CIFAR's page) or torchvision's; a mirror's may be None
    size: int | None    # bytes: checked first, and a download is cut off past it
    sha256: str | None  # None only where no independent record of it exists (then recorded)


EXTRACTED_MARKER = ".extracted.json"


def _safe_member_path(dest: Path, name: str) -> Path:
    """Where archive member ``name`` lands under ``dest``; refuses anything that would escape."""
    pure = PurePosixPath(name.replace("\\", "/"))
    target = (dest / pure).resolve()
    if pure.is_absolute() or ".." in pure.parts or not target.is_relative_to(dest.resolve()):
        raise DownloadError(f"refusing archive member {name!r}: it would be written outside {dest}")
    return target


def _extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for m in members:
            _safe_member_path(dest, m.name)
            # The datasets hold only files and folders; links and devices could point anywhere.
            if not (m.isfile() or m.isdir()):
                raise DownloadError(f"{archive}: refusing member {m.name!r} (not a file or folder)")
        # The "data" filter (Python ≥ 3.11.4) is a second guard and drops odd permission bits.
        extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, members=members, **extra)


def _extract_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            _safe_member_path(dest, name)
        zf.extractall(dest)


def extract_archive(archive: Path, dest: Path) -> None:
    """Extract a .tar(.gz) or .zip into ``dest``, refusing members that would land outside it."""
    if zipfile.is_zipfile(archive):
        _extract_zip(archive, dest)
    elif tarfile.is_tarfile(archive):
        _extract_tar(archive, dest)
    else:
        raise DownloadError(f"{archive}: neither a tar nor a zip archive")


def _archive_record(archives: Sequence[Archive]) -> list[dict[str, str | int | None]]:
    return [{"url": a.url, "filename": a.filename, "md5": a.md5, "size": a.size,
             "sha256": a.sha256} for a in archives]


def download_and_extract(name: str, archives: Sequence[Archive], downloads: str | Path,
                         timeout_s: float = 20.0) -> Path:
    """Fetch ``archives`` into ``downloads/`` and extract them once into ``downloads/<name>/``;
    return that folder, the root a reader reads the published layout from.

    A marker written last records which archives were extracted; while it matches them nothing is
    fetched, checked or extracted again (so the archives may even be deleted). An archive placed
    by hand in ``downloads/`` is checked against its pins (size, MD5, SHA-256) and used without the
    network. Network failures raise :class:`DownloadError` within about ``timeout_s``, naming the
    URL and where to place the file by hand.
    """
    archives = list(archives)
    downloads = Path(downloads)
    root = downloads / name
    marker = root / EXTRACTED_MARKER
    if marker.is_file() and read_json(marker).get("archives") == _archive_record(archives):
        return root
    digests = {a.filename: fetch(a.url, downloads / a.filename, a.sha256, timeout_s, md5=a.md5,
                                 size=a.size) for a in archives}
    # Extract into a temporary folder that replaces ``root`` only when complete: an interrupted
    # extraction never looks finished.
    with atomic_dir(root) as tmp:
        for a in archives:
            extract_archive(downloads / a.filename, tmp)
        write_json_atomic(tmp / EXTRACTED_MARKER,
                          {"archives": _archive_record(archives), "sha256": digests})
    return root


def fetched(cfg: Any, publisher: Sequence[Archive], downloads: Path) -> Path:
    """The extracted root of dataset ``cfg`` (params.data.ImageDataset): its mirror's archives
    (``datasets.<name>.archives``, each with its own pins) where params.yaml gives them, else the
    ``publisher``'s."""
    pins = getattr(cfg, "archives", None)
    archives = publisher if pins is None else [
        Archive(a.url, a.filename, md5=a.md5, size=a.size, sha256=a.sha256) for a in pins]
    return download_and_extract(cfg.kind, archives, downloads, cfg.timeout_s)
