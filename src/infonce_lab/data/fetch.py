"""A careful single-file downloader for the stages that need data from the internet.

Rules, in the order they matter on a machine without internet:

* A file already at ``dest`` is used as is (after its checksum is checked, when one is pinned), so a
  user can place it by hand and the stage never touches the network.
* Every failure is one :class:`DownloadError` that names the URL and the reason and says where to
  put the file by hand. There are no retries: offline, a stage fails within about ``timeout_s``
  rather than a multiple of it.
* The download streams into a temporary file next to ``dest`` and is renamed into place only once
  complete and verified, so an interrupted or corrupted download never looks like a finished one.
* With no pinned checksum the digest of what arrived is returned, so the caller can record it
  (trust on first use) and pin it later.
* An MD5 can be pinned besides (or instead of) a SHA-256, because that is the only digest some
  publishers give (the CIFAR page, torchvision's STL-10). It guards against corruption and wrong
  files, not against a deliberate forgery; the SHA-256 is still returned so the caller can record
  and later pin it.
* A pinned ``size`` (bytes) is checked before any hashing, and a download that runs past it is
  cut off there: a wrong or endless reply cannot fill the disk.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from infonce_lab.io import mkstemp_public, sha256_file

_CHUNK = 1 << 20
# A download's floor: every read waits at most ``timeout_s`` for a byte, and over each window of
# this many seconds at least this many bytes a second must come — a server that trickles a byte
# every few seconds is cut off in a minute, where the per-read timeout alone would wait for ever.
# 16 KiB/s is far below any working link (STL-10's 2.6 GB would take two days at that rate).
MIN_RATE_BYTES_PER_S = 16 << 10
RATE_WINDOW_S = 60.0
# A file with no pinned size may be at most this large, so an endless reply cannot fill the disk.
UNSIZED_MAX_BYTES = 8 << 30


class DownloadError(ValueError):
    """A download failed or its content does not match the pinned checksum."""


_REDO = "delete it and run the stage again, or put the right file there by hand"


def _check_pins(where: str | Path, pins: Iterable[tuple[str, str | None, str]],
                advice: str) -> None:
    """Raise :class:`DownloadError` at the first (name, pinned, actual) digest that differs from
    its pin (a pin of None is not checked)."""
    for name, expected, actual in pins:
        if expected is not None and actual != expected.lower():
            raise DownloadError(
                f"{where}: {name} mismatch (expected {expected}, got {actual}); {advice}")


def verify_sha256(path: str | Path, expected: str | None) -> str:
    """Return ``path``'s SHA-256; raise :class:`DownloadError` if it differs from ``expected``.

    ``expected=None`` only computes the digest (nothing pinned yet).
    """
    actual = sha256_file(path)
    _check_pins(path, [("sha256", expected, actual)], _REDO)
    return actual


# Not used for security; the flag keeps MD5 available on FIPS-restricted OpenSSL builds.
_md5 = functools.partial(hashlib.md5, usedforsecurity=False)


def _copy_digests(read: Callable[[int], bytes],
                  write: Callable[[bytes], object] | None = None,
                  limit: int | None = None) -> tuple[str, str, int]:
    """(sha256, md5, bytes) of everything ``read`` gives, in one pass (archives run to
    gigabytes), each block also handed to ``write``; stops once more than ``limit`` bytes came."""
    sha, md5, n = hashlib.sha256(), _md5(), 0
    while block := read(_CHUNK):
        n += len(block)
        if limit is not None and n > limit:
            break
        if write is not None:
            write(block)
        sha.update(block)
        md5.update(block)
    return sha.hexdigest(), md5.hexdigest(), n


def _check_size(where: str | Path, expected: int | None, actual: int, advice: str) -> None:
    if expected is not None and actual != expected:
        got = f"more than {expected}" if actual > expected else str(actual)
        raise DownloadError(f"{where}: size mismatch (expected {expected} bytes, got {got}); "
                            f"{advice}")


def verify_checksums(path: str | Path, sha256: str | None, md5: str | None,
                     size: int | None = None) -> str:
    """Return ``path``'s SHA-256 after checking it against whichever of the size and digests are
    pinned (the size first: it costs nothing).

    Raises :class:`DownloadError` on a mismatch. With only ``sha256`` this is
    :func:`verify_sha256`.
    """
    _check_size(path, size, Path(path).stat().st_size, _REDO)
    if md5 is None:
        return verify_sha256(path, sha256)
    with open(path, "rb") as fh:
        actual_sha, actual_md5, _ = _copy_digests(fh.read)
    _check_pins(path, (("sha256", sha256, actual_sha), ("md5", md5, actual_md5)), _REDO)
    return actual_sha


def _manual_hint(dest: Path, sha256: str | None, md5: str | None = None,
                 size: int | None = None) -> str:
    pins = [f"its sha256 must be {sha256}"] if sha256 else []
    pins += [f"its md5 must be {md5}"] if md5 else []
    pins += [f"its size must be {size} bytes"] if size is not None else []
    pinned = f" ({'; '.join(pins)})" if pins else ""
    return (f"download it on a machine with internet and put it at {dest}{pinned}, then run the "
            "stage again")


def _resolve_within(host: str, port: int, timeout_s: float) -> None:
    """Resolve ``host`` within ``timeout_s`` or raise :class:`TimeoutError`.

    Socket timeouts do not cover name resolution, and an offline resolver can stall for many
    seconds per nameserver; a daemon thread bounds the wait without blocking interpreter exit.
    """
    outcome: list[BaseException | None] = []

    def work() -> None:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            outcome.append(None)
        except BaseException as exc:  # handed back to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=work, name=f"resolve {host}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not outcome:
        raise TimeoutError(f"name resolution of {host} took longer than {timeout_s:g} s")
    if outcome[0] is not None:
        raise outcome[0]


HUB_PROBE_TIMEOUT_S = 10.0


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` set: nothing may contact the hub."""
    return any(os.environ.get(v, "0").lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def hub_reachable(timeout_s: float | None = None) -> bool:
    """False at once when :func:`hub_offline` (offline means offline), else whether the endpoint
    (``HF_ENDPOINT``) answers an HTTP request within ``timeout_s`` (:data:`HUB_PROBE_TIMEOUT_S`)
    in all.

    An HTTP reply, not just an accepted connection: behind a proxy or a dead backend a server can
    accept and never answer, and huggingface_hub then retries every file with backoff for minutes
    (measured: still retrying after 621 s). Any status counts as an answer; the probe runs in a
    thread so that its deadline holds however slowly the bytes come."""
    if hub_offline():
        return False
    timeout_s = HUB_PROBE_TIMEOUT_S if timeout_s is None else timeout_s
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = urllib.parse.urlsplit(endpoint)
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    answered: list[bool] = []

    def probe() -> None:
        try:
            _resolve_within(host, port, timeout_s)
            with urllib.request.urlopen(urllib.request.Request(endpoint + "/", method="HEAD"),
                                        timeout=timeout_s):
                pass
        except urllib.error.HTTPError:
            pass                      # a 4xx/5xx is an answer: the hub's own calls will explain
        except (OSError, http.client.HTTPException, ValueError):
            return
        answered.append(True)

    thread = threading.Thread(target=probe, name=f"probe {host}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return bool(answered)


_COMMIT = re.compile(r"[0-9a-f]{40}")
_ETAG = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# (blob, size, mtime) already checked by this process: a stage loads tokenizer, config and model
# of one snapshot, and hashing BERT-base's 440 MB of weights once is enough.
_VERIFIED: set[tuple[str, int, int]] = set()


def hub_snapshot(cache: str | Path, repo_id: str, revision: str | None,
                 repo_type: str = "model") -> Path:
    """The folder of ``repo_id`` at ``revision`` (a commit, or a branch the cache has a ref of;
    None: main) in a Hugging Face hub cache (huggingface_hub's layout)."""
    from huggingface_hub.file_download import repo_folder_name

    repo = Path(cache) / repo_folder_name(repo_id=repo_id, repo_type=repo_type)
    commit = revision or "main"
    if not _COMMIT.fullmatch(commit):
        ref = repo / "refs" / commit
        if not ref.is_file():
            raise DownloadError(f"{repo_id}: the hub cache {cache} has no {commit!r} of it")
        commit = ref.read_text(encoding="utf-8").strip()
    return repo / "snapshots" / commit


def verify_hub_snapshot(snapshot: str | Path) -> int:
    """Check every file of a hub cache snapshot against the blob it links to; return how many
    were checked (now or earlier in this process).

    huggingface_hub names each blob by the ETag the hub served for that file at the snapshot's
    commit — the SHA-256 of an LFS file (the weights), the git blob SHA-1 of any other — but does
    not compare the bytes with it when it loads them; so a pinned revision pins the bytes only
    once this check has run. A file that is not a link to a blob (a copying cache, e.g. Windows
    without symlinks) cannot be checked and is skipped. Raises :class:`DownloadError` naming the
    file at the first mismatch.
    """
    from huggingface_hub.utils.sha import git_hash

    checked = 0
    for link in sorted(Path(snapshot).rglob("*")):
        blob = link.resolve()
        if not (link.is_symlink() and blob.is_file() and _ETAG.fullmatch(blob.name)):
            continue
        st = blob.stat()
        key = (str(blob), st.st_size, st.st_mtime_ns)
        if key not in _VERIFIED:
            # git's SHA-1 needs the whole file; only non-LFS files (configs, vocabularies) have one
            actual = sha256_file(blob) if len(blob.name) == 64 else git_hash(blob.read_bytes())
            if actual != blob.name:
                raise DownloadError(
                    f"{link}: its bytes do not match the hub's digest of it at this commit "
                    f"({'sha256' if len(blob.name) == 64 else 'git sha1'} {blob.name}, got "
                    f"{actual}): the cached file is damaged or was changed. Delete {blob} and "
                    "run the stage again (it is downloaded afresh).")
            _VERIFIED.add(key)
        checked += 1
    return checked


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _stream(url: str, fh: BinaryIO, timeout_s: float,
            limit: int | None = None) -> tuple[str, str, int]:
    """Copy ``url`` into the open binary file ``fh`` (at most ``limit`` bytes); return the
    (SHA-256, MD5, bytes received) of it."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and parts.scheme in ("http", "https"):
        _resolve_within(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                        timeout_s)
    # ``timeout`` applies to connect and to every read, which is what bounds an offline failure;
    # read1 returns what has come, so the rate floor is checked however slowly the bytes arrive.
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return _copy_digests(_RateFloor(resp.read1), fh.write, limit)


class _RateFloor:
    """A ``read`` that raises :class:`TimeoutError` when a window of :data:`RATE_WINDOW_S`
    seconds brought fewer than :data:`MIN_RATE_BYTES_PER_S` bytes a second."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._since, self._got = time.monotonic(), 0

    def __call__(self, n: int) -> bytes:
        block = self._read(n)
        self._got += len(block)
        elapsed = time.monotonic() - self._since
        if block and elapsed >= RATE_WINDOW_S:
            if self._got < MIN_RATE_BYTES_PER_S * elapsed:
                raise TimeoutError(
                    f"{self._got} bytes in {elapsed:.0f} s, below the floor of "
                    f"{MIN_RATE_BYTES_PER_S} bytes/s (data.fetch.MIN_RATE_BYTES_PER_S)")
            self._since, self._got = time.monotonic(), 0
        return block


def fetch(url: str, dest: str | Path, sha256: str | None, timeout_s: float = 20.0,
          md5: str | None = None, size: int | None = None) -> str:
    """Make sure ``dest`` holds the file at ``url`` and return its SHA-256.

    An existing ``dest`` is verified against ``size``, ``sha256`` and ``md5`` (each when given)
    and used without any network access. Otherwise the file is downloaded into a temporary file in ``dest``'s folder, verified,
    and renamed into place. Raises :class:`DownloadError` on any network or checksum failure; no
    partial file is left behind.
    """
    dest = Path(dest)
    if dest.exists():
        return verify_checksums(dest, sha256, md5, size)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # The project's temporary-file pattern: a killed download's leftover is swept by the next
    # stage that runs alone (io.sweep_stale_temporaries) and never hashed by DVC.
    fd, tmp_name = mkstemp_public(dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            try:
                actual, actual_md5, received = _stream(
                    url, fh, timeout_s, UNSIZED_MAX_BYTES if size is None else size)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                # URLError, HTTPError, socket timeouts and refused connections are all OSErrors;
                # ValueError covers a malformed URL, HTTPException a broken server reply.
                raise DownloadError(
                    f"could not download {url}: {_describe(exc)}. To get past this, "
                    + _manual_hint(dest, sha256, md5, size)
                ) from exc
        discarded = ("the download was discarded. If the source changed on purpose, update the "
                     f"pin; otherwise {_manual_hint(dest, sha256, md5, size)}")
        if size is None and received > UNSIZED_MAX_BYTES:
            raise DownloadError(
                f"{url}: the reply ran past {UNSIZED_MAX_BYTES} bytes, the most a download "
                "without a pinned size may take (data.fetch.UNSIZED_MAX_BYTES); it was "
                "discarded. Download it by hand and place it as " + str(dest))
        _check_size(url, size, received, discarded)
        _check_pins(url, (("sha256", sha256, actual), ("md5", md5, actual_md5)), discarded)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return actual


__all__ = ["DownloadError", "fetch", "hub_snapshot", "verify_checksums", "verify_hub_snapshot",
           "verify_sha256"]
