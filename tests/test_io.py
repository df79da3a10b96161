"""The atomic writers give their outputs the modes a plain open/mkdir would: the umask decides
who may read a shared report, not the temporary file's private 0o600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from infonce_lab import io


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_and_folders_get_the_umask_modes(tmp_path: Path, umask: int) -> None:
    plain_file, plain_dir = tmp_path / "plain.txt", tmp_path / "plain"
    plain_file.write_text("x")
    plain_dir.mkdir()
    io.write_json_atomic(tmp_path / "a.json", {"x": 1})
    io.write_text_atomic(tmp_path / "b.md", "text")
    io.save_npz_atomic(tmp_path / "c.npz", x=np.zeros(2))
    with io.atomic_dir(tmp_path / "folder") as out:
        (out / "inner.json").write_text("{}")
    for f in ("a.json", "b.md", "c.npz", "folder/inner.json"):
        assert _mode(tmp_path / f) == _mode(plain_file) == 0o666 & ~umask, f
    assert _mode(tmp_path / "folder") == _mode(plain_dir) == 0o777 & ~umask


def test_reading_the_umask_leaves_it_unchanged(umask: int) -> None:
    assert io.current_umask() == umask
    assert io.current_umask() == umask
