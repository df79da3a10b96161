"""Faults at the writers' injected points — a kill between the two renames of a folder swap, a
dead writer's temporaries, a deleted checkpoint — are recovered by the next run with no hand
step, and nothing complete is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infonce_lab import io
from infonce_lab.io import atomic_dir, write_json_atomic


def _fill(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("a.json", "b.json"):
        (folder / name).write_text(text)


ATOMIC_DIR_CHILD = """
import os, sys
from pathlib import Path
from infonce_lab.io import atomic_dir
os.chdir(sys.argv[1])
with atomic_dir(Path("out")) as tmp:
    for name in ("a.json", "b.json"):
        (tmp / name).write_text("new")
"""


@pytest.mark.parametrize("point, visible", [("journal", {"old"}), ("swap", None)])
def test_a_folder_swap_killed_mid_way_is_finished_by_the_next_write(tmp_path, monkeypatch,
                                                                   point, visible):
    """SIGKILL (a real one: the child kills itself at io.kill_point) once the new folder is
    complete and journaled: before the renames the old output is intact; between them the
    output is briefly absent. Either way the next write of the output (or the next stage's
    start) finishes the swap: the new folder, complete, and nothing left over."""
    import signal
    import subprocess
    import sys

    out = tmp_path / "out"
    _fill(out, "old")
    proc = subprocess.run([sys.executable, "-c", ATOMIC_DIR_CHILD, str(tmp_path)],
                          env={**os.environ, io.KILL_AT_ENV: point}, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    if visible is None:
        assert not out.exists() and (tmp_path / ".out.old").is_dir()
    else:
        assert {p.read_text() for p in out.iterdir()} == visible
    monkeypatch.chdir(tmp_path)
    io.recover_swap(Path("out"))   # what the next write of it does first
    assert sorted(p.name for p in tmp_path.iterdir()) == [".journal", "out"]
    assert not any((tmp_path / ".journal").iterdir())
    assert {p.read_text() for p in out.iterdir()} == {"new"}


def test_a_swap_whose_second_rename_landed_keeps_the_new_output(tmp_path):
    out, old = tmp_path / "out", tmp_path / ".out.old"
    _fill(out, "new")
    _fill(old, "old")
    io.recover_swap(out)
    assert not old.exists() and {p.read_text() for p in out.iterdir()} == {"new"}


def test_a_dead_writers_temporaries_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "m.json"
    (tmp_path / ".m.json.x1y2ab34.tmp").write_text("partial")            # write_bytes_atomic's
    (tmp_path / ".m.json.k9mmqq11.tmp").mkdir()                             # replace_atomic's
    (tmp_path / ".other.json.z0z0z0z0.tmp").write_text("someone else's")
    write_json_atomic(target, {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.json.z0z0z0z0.tmp", "m.json"]
    folder = tmp_path / "runs"
    (tmp_path / ".runs.q1w2e3r4.tmp").mkdir()
    with atomic_dir(folder) as tmp:
        (tmp / "r.json").write_text("{}")
    assert not (tmp_path / ".runs.q1w2e3r4.tmp").exists()


def test_a_deleted_checkpoint_is_an_error_naming_its_epoch(tmp_path):
    from infonce_lab.pipeline.extract import checkpoints

    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "model.pt").write_bytes(b"x")
    (tmp_path / "checkpoints/epoch_0010.pt").write_bytes(b"x")
    assert [p.name for p in checkpoints(tmp_path, [10])] == ["epoch_0010.pt", "model.pt"]
    with pytest.raises(FileNotFoundError, match=r"epoch_0030\.pt: the epoch-30 checkpoint"):
        checkpoints(tmp_path, [10, 30])


def test_a_damaged_text_encoder_weight_is_refused(tmp_path):
    from infonce_lab.io import CorruptFileError
    from infonce_lab.models.text import (
        build_sentence_encoder,
        load_sentence_encoder,
        save_sentence_encoder,
    )
    from infonce_lab.params import TransformerEncoderConfig

    cfg = TransformerEncoderConfig(pooling="mean", random_init=True, overrides={
        "num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2,
        "intermediate_size": 32})
    save_sentence_encoder(build_sentence_encoder(cfg, 0), tmp_path / "enc",
                          {"encoder": cfg.model_dump(mode="json")})
    load_sentence_encoder(tmp_path / "enc")
    for name in ("model.safetensors", "head.safetensors"):
        f = tmp_path / "enc" / name
        good = f.read_bytes()
        f.write_bytes(good[:-64] + bytes(64))
        with pytest.raises(CorruptFileError, match=rf"{name}: SHA-256"):
            load_sentence_encoder(tmp_path / "enc")
        f.write_bytes(good)


@pytest.fixture()
def full_disk(tmp_path):
    """A 256 KiB tmpfs (root only: skipped where mounting is not allowed)."""
    import subprocess

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    # A plain unmount first: a lazy one (-l) was seen to leave the mount in place, and pytest's
    # later clean-up of the temporary folders then fails on it.
    if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_loses_nothing_and_says_so(full_disk):
    import json

    import numpy as np

    from infonce_lab.models import build_encoder
    from infonce_lab.models.build import checkpoint_meta, load_encoder, save_encoder
    from infonce_lab.params import ResNetConfig
    from infonce_lab.stage import unexpected_error

    cfg = ResNetConfig(widths=[8, 16], blocks=[1, 1], head_hidden=8, head_dim=8)
    meta = checkpoint_meta(cfg, np.zeros((2, 1, 8, 8), dtype=np.float32))
    model = full_disk / "model.pt"
    save_encoder(build_encoder(cfg, 1, 8), model, meta)
    before = model.read_bytes()
    write_json_atomic(full_disk / "m.json", {"a": 1})
    filler = full_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)   # fill the rest of the disk
    try:
        while os.write(fd, bytes(4096)):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    big = build_encoder(ResNetConfig(widths=[64, 128], blocks=[2, 2], head_hidden=64,
                                     head_dim=32), 1, 8)
    with pytest.raises(OSError) as exc:
        save_encoder(big, model, meta)
    message = unexpected_error(exc.value)
    assert "No space left" in message and str(model) in message, message
    with pytest.raises(OSError) as exc2:
        write_json_atomic(full_disk / "m.json", {"a": list(range(100_000))})
    assert "No space left" in unexpected_error(exc2.value)
    # The previous outputs are whole, and no temporary is left behind.
    assert model.read_bytes() == before and load_encoder(model)[0] is not None
    assert json.loads((full_disk / "m.json").read_text()) == {"a": 1}
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler", "m.json", "model.pt",
                                                           "model.pt.sha256"]


def test_what_runs_no_longer_in_the_study_left_is_swept(tmp_path: Path, monkeypatch) -> None:
    """A failed run keeps .resume/<run>/ (its next attempt resumes) and live/<run>/; a run
    that left params.yaml has no next attempt, so its folders go, and only its."""
    from infonce_lab.pipeline.training_run import LIVE_DIR, RESUME_DIR, sweep_abandoned

    monkeypatch.chdir(tmp_path)
    for root in (RESUME_DIR, LIVE_DIR):
        for run in ("kept-1", "gone-9"):
            (root / run).mkdir(parents=True)
            (root / run / "state.pt").write_text("x")
    removed = sweep_abandoned({"kept-1"})
    assert sorted(map(str, removed)) == [".resume/gone-9", "live/gone-9"]
    assert (RESUME_DIR / "kept-1/state.pt").is_file() and (LIVE_DIR / "kept-1").is_dir()
    assert not (RESUME_DIR / "gone-9").exists() and not (LIVE_DIR / "gone-9").exists()
