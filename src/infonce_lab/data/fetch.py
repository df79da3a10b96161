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
  publishers give (torchvision lists MD5s for CIFAR, STL-10 and Tiny-ImageNet). It guards against
  corruption and wrong files, not against a deliberate forgery; the SHA-256 is still returned so
  the caller can record and later pin it.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import os
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from infonce_lab.io import mkstemp_public, sha256_file

_CHUNK = 1 << 20


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
                  write: Callable[[bytes], object] | None = None) -> tuple[str, str]:
    """(sha256, md5) of everything ``read`` gives, in one pass (archives run to gigabytes),
    each block also handed to ``write``."""
    sha, md5 = hashlib.sha256(), _md5()
    while block := read(_CHUNK):
        if write is not None:
            write(block)
        sha.update(block)
        md5.update(block)
    return sha.hexdigest(), md5.hexdigest()


def verify_checksums(path: str | Path, sha256: str | None, md5: str | None) -> str:
    """Return ``path``'s SHA-256 after checking it against whichever of the digests are pinned.

    Raises :class:`DownloadError` on a mismatch. With ``md5=None`` this is :func:`verify_sha256`.
    """
    if md5 is None:
        return verify_sha256(path, sha256)
    with open(path, "rb") as fh:
        actual_sha, actual_md5 = _copy_digests(fh.read)
    _check_pins(path, (("sha256", sha256, actual_sha), ("md5", md5, actual_md5)), _REDO)
    return actual_sha


def _manual_hint(url: str, dest: Path, sha256: str | None, md5: str | None = None) -> str:
    pins = [f"its sha256 must be {sha256}"] if sha256 else []
    pins += [f"its md5 must be {md5}"] if md5 else []
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


def hub_reachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """False at once when :func:`hub_offline` (offline means offline), else whether the endpoint
    (``HF_ENDPOINT``) resolves and accepts a connection within ``timeout_s`` each. huggingface_hub
    itself retries with backoff for about a minute before giving up."""
    if hub_offline():
        return False
    url = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    try:
        _resolve_within(host, port, timeout_s)
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError:
        return False
    return True


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _stream(url: str, fh: BinaryIO, timeout_s: float) -> tuple[str, str]:
    """Copy ``url`` into the open binary file ``fh``; return the (SHA-256, MD5) of what was
    written."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and parts.scheme in ("http", "https"):
        _resolve_within(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                        timeout_s)
    # ``timeout`` applies to connect and to every read, which is what bounds an offline failure.
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return _copy_digests(resp.read, fh.write)


def fetch(url: str, dest: str | Path, sha256: str | None, timeout_s: float = 20.0,
          md5: str | None = None) -> str:
    """Make sure ``dest`` holds the file at ``url`` and return its SHA-256.

    An existing ``dest`` is verified against ``sha256`` and ``md5`` (each when given) and used
    without any network access. Otherwise the file is downloaded into a temporary file in ``dest``'s folder, verified,
    and renamed into place. Raises :class:`DownloadError` on any network or checksum failure; no
    partial file is left behind.
    """
    dest = Path(dest)
    if dest.exists():
        return verify_checksums(dest, sha256, md5)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = mkstemp_public(dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            try:
                actual, actual_md5 = _stream(url, fh, timeout_s)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                # URLError, HTTPError, socket timeouts and refused connections are all OSErrors;
                # ValueError covers a malformed URL, HTTPException a broken server reply.
                raise DownloadError(
                    f"could not download {url}: {_describe(exc)}. To get past this, "
                    + _manual_hint(url, dest, sha256, md5)
                ) from exc
        _check_pins(url, (("sha256", sha256, actual), ("md5", md5, actual_md5)),
                    "the download was discarded. If the source changed on purpose, update the "
                    f"pinned digest; otherwise {_manual_hint(url, dest, sha256, md5)}")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return actual


__all__ = ["DownloadError", "fetch", "verify_checksums", "verify_sha256"]
