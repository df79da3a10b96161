"""Every atomic write makes its bytes durable before the rename and the rename durable after it
(file fsync → rename → directory fsync), so a power cut leaves the old output or the new one;
and torch.save's full-disk error comes out naming the file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from infonce_lab import io as lab_io


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(what, path) of every fsync and rename, in order: fsyncs by the path of their fd."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | os.PathLike, dst: str | os.PathLike) -> None:
        events.append(("rename", f"{os.fspath(src)} -> {os.fspath(dst)}"))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


def _durable(events: list[tuple[str, str]], target: Path) -> None:
    """The rename onto ``target`` has its source fsynced before and its folder fsynced after."""
    renames = [i for i, (what, p) in enumerate(events)
               if what == "rename" and p.endswith(f" -> {target}")]
    assert len(renames) == 1, events
    i = renames[0]
    src = events[i][1].split(" -> ")[0]
    synced_before = {p for what, p in events[:i] if what == "fsync"}
    assert os.path.realpath(src) in synced_before or any(
        p.startswith(os.path.realpath(src)) for p in synced_before), (src, events)
    assert ("fsync", os.path.realpath(target.parent)) in events[i + 1:], events


def test_a_file_write_is_fsynced_then_renamed_then_its_folder(tmp_path: Path,
                                                              journal) -> None:
    target = tmp_path / "m.json"
    lab_io.write_json_atomic(target, {"a": 1})
    _durable(journal, target)


def test_a_named_writer_is_fsynced_then_renamed_then_its_folder(tmp_path: Path,
                                                                journal) -> None:
    target = tmp_path / "a.npz"
    lab_io.save_npz_atomic(target, x=__import__("numpy").arange(3))
    _durable(journal, target)


def test_a_folder_swap_fsyncs_every_file_before_and_the_parent_after(tmp_path: Path,
                                                                      journal) -> None:
    target = tmp_path / "out"
    with lab_io.atomic_dir(target) as out:
        (out / "sub").mkdir()
        (out / "a.txt").write_text("a")
        (out / "sub" / "b.txt").write_text("b")
    swap = [i for i, (what, p) in enumerate(journal)
            if what == "rename" and p.endswith(f" -> {target}")]
    assert len(swap) == 1, journal
    before = {p for what, p in journal[:swap[0]] if what == "fsync"}
    for name in ("a.txt", "sub/b.txt"):
        assert any(p.endswith(f"/{name}") for p in before), (name, journal)
    assert ("fsync", os.path.realpath(tmp_path)) in journal[swap[0] + 1:], journal
    assert (target / "sub" / "b.txt").read_text() == "b"


def test_a_short_torch_write_names_the_file_and_keeps_the_old_one(tmp_path: Path) -> None:
    from infonce_lab.stage import unexpected_error

    target = tmp_path / "model.pt"
    target.write_bytes(b"previous")
    with pytest.raises(OSError) as exc, lab_io.replace_atomic(target) as tmp:
        tmp.write_bytes(b"part")
        # torch.save's own words for a write that came up short (PyTorchFileWriter)
        raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 64 vs 0")
    assert exc.value.errno == errno.ENOSPC and exc.value.filename == str(target)
    message = unexpected_error(exc.value)
    assert str(target) in message and "No space left" in message
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]


def test_other_runtime_errors_pass_through_unchanged(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not a write"), \
            lab_io.replace_atomic(tmp_path / "x.pt"):
        raise RuntimeError("not a write")
