"""A present but unreadable file (truncated, zeroed, hand-edited) is one message naming the file,
what it should be and what to do — not the parser's traceback — and anything else unexpected in a
stage is one paragraph with exit 1, the traceback behind INFONCE_LAB_DEBUG."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from infonce_lab.io import CorruptFileError, read_json, save_npz_atomic
from infonce_lab.models.build import checkpoint_meta, load_encoder, save_encoder
from infonce_lab.params import ResNetConfig
from infonce_lab.train.checkpointing import load_state, save_state


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


@pytest.fixture()
def checkpoint(tmp_path: Path) -> Path:
    from infonce_lab.models import build_encoder

    cfg = ResNetConfig(widths=[8, 16], blocks=[1, 1], head_hidden=8, head_dim=8)
    x = np.zeros((2, 1, 8, 8), dtype=np.float32)
    path = tmp_path / "model.pt"
    save_encoder(build_encoder(cfg, 1, 8), path, checkpoint_meta(cfg, x))
    return path


@pytest.mark.parametrize("damage", ["truncate", "zeros", "garbage", "64 zeroed bytes"])
def test_a_damaged_checkpoint_names_its_file(checkpoint: Path, damage: str):
    load_encoder(checkpoint)  # intact: loads
    data = checkpoint.read_bytes()
    if damage == "truncate":
        _truncate(checkpoint)
    elif damage == "zeros":
        checkpoint.write_bytes(bytes(len(data)))
    elif damage == "garbage":
        checkpoint.write_text("not a checkpoint")
    else:   # inside a weight tensor: torch.load itself reads it without complaint
        mid = len(data) // 2
        checkpoint.write_bytes(data[:mid] + bytes(64) + data[mid + 64:])
    with pytest.raises(CorruptFileError, match=r"model\.pt: SHA-256 .* differs from the .* "
                                                r"recorded when it was written"):
        load_encoder(checkpoint)
    # Without the recorded digest the parser's failure is still one message (a damaged tensor
    # is not: that is what the digest is for).
    (checkpoint.parent / "model.pt.sha256").unlink()
    with pytest.raises(CorruptFileError, match=r"model\.pt: no model\.pt\.sha256 beside it"):
        load_encoder(checkpoint)


def test_a_truncated_resume_state_is_set_aside_and_the_run_starts_afresh(tmp_path: Path,
                                                                          capsys):
    path = tmp_path / "state.pt"
    save_state(path, {"fingerprint": "f", "step": 3, "x": torch.zeros(1000)})
    assert load_state(path, "f")["step"] == 3
    _truncate(path)
    assert load_state(path, "f") is None
    assert "state.pt: SHA-256" in capsys.readouterr().err
    assert not path.exists()


def test_zeroed_bytes_in_a_resume_state_are_caught_by_its_digest(tmp_path: Path, capsys):
    """torch.load reads a state whose tensor bytes were zeroed without complaint (the run then
    resumed from wrong weights); the digest written beside it refuses it."""
    path = tmp_path / "state.pt"
    save_state(path, {"fingerprint": "f", "step": 3, "x": torch.ones(100_000)})
    data = bytearray(path.read_bytes())
    at = len(data) // 2
    data[at:at + 4096] = bytes(4096)
    path.write_bytes(bytes(data))
    assert torch.load(path, weights_only=True)["x"].sum() < 100_000   # it loads, wrong
    assert load_state(path, "f") is None
    assert "state.pt: SHA-256" in capsys.readouterr().err and not path.exists()
    # one without a digest (copied alone) is not trusted either
    save_state(path, {"fingerprint": "f", "step": 3})
    (tmp_path / "state.pt.sha256").unlink()
    assert load_state(path, "f") is None


def test_invalid_json_names_its_file(tmp_path: Path):
    path = tmp_path / "metrics.json"
    path.write_text('{"a": 1,')
    with pytest.raises(CorruptFileError, match=r"metrics\.json: not a readable JSON file"):
        read_json(path)
    with pytest.raises(FileNotFoundError):  # missing is not corrupt
        read_json(tmp_path / "absent.json")


def test_a_truncated_bank_names_its_file(tmp_path: Path):
    from infonce_lab.pipeline.extract import load_banks

    save_npz_atomic(tmp_path / "bank_epoch_0010.npz", scores=np.random.default_rng(0).random(5000))
    assert load_banks(tmp_path, [10])[0][0] == 10
    _truncate(tmp_path / "bank_epoch_0010.npz")
    with pytest.raises(CorruptFileError, match=r"bank_epoch_0010\.npz: not a readable tail bank"):
        load_banks(tmp_path, [10])


def test_a_deleted_bank_is_named_not_skipped(tmp_path: Path):
    from infonce_lab.pipeline.extract import load_banks

    for e in (5, 10):
        save_npz_atomic(tmp_path / f"bank_epoch_{e:04d}.npz", scores=np.zeros(3))
    assert [e for e, _ in load_banks(tmp_path, [10, 5])] == [5, 10]
    (tmp_path / "bank_epoch_0005.npz").unlink()
    with pytest.raises(FileNotFoundError, match=r"bank_epoch_0005\.npz: the tail bank of epoch 5"):
        load_banks(tmp_path, [5, 10])


def test_a_model_of_another_run_or_other_params_is_refused(tmp_path: Path, raw):
    """A model and its checksum copied from another run pass the checksum (the bytes are
    intact); the run and params fingerprint the model records do not."""
    import shutil

    import torch

    from infonce_lab.models.build import save_encoder
    from infonce_lab.params import parse_params
    from infonce_lab.pipeline.binding import check_binding, model_binding

    params = parse_params(raw)
    run_a, run_b = params.runs()[0], params.runs()[1]
    a = tmp_path / "a" / "model.pt"
    a.parent.mkdir()
    save_encoder(torch.nn.Linear(2, 2), a, {**model_binding(params, run_a)})
    b = tmp_path / "b" / "model.pt"
    b.parent.mkdir()
    shutil.copy(a, b)
    shutil.copy(a.with_name("model.pt.sha256"), b.with_name("model.pt.sha256"))
    blob = torch.load(b, weights_only=True)
    meta = {k: v for k, v in blob.items() if k != "state_dict"}
    check_binding(a, meta, model_binding(params, run_a))      # its own run: accepted
    with pytest.raises(CorruptFileError, match=r"b/model\.pt: holds the model of run"):
        check_binding(b, meta, model_binding(params, run_b))
    raw["training"]["lr"] = raw["training"]["lr"] * 2          # params.yaml edited since
    with pytest.raises(CorruptFileError, match=r"a/model\.pt: trained with other params"):
        check_binding(a, meta, model_binding(parse_params(raw), run_a))


STAGE = """
import errno, sys
import typer
from infonce_lab.stage import stage
app = typer.Typer(add_completion=False)

@app.command()
@stage
def main(kind: str) -> None:
    if kind == "key":
        {}[174812789]
    raise OSError(errno.ENOSPC, "No space left on device", "models/vision/x/model.pt")

app()
"""


@pytest.mark.parametrize("kind,code,says", [
    ("key", 1, "unexpected KeyError at <string>:11: 174812789"),
    ("disk", 1, "No space left on device writing or reading models/vision/x/model.pt"),
])
def test_an_unexpected_error_is_one_paragraph(tmp_path: Path, kind: str, code: int, says: str,
                                              monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("INFONCE_LAB_DEBUG", raising=False)
    proc = subprocess.run([sys.executable, "-c", STAGE, kind], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == code
    assert proc.stderr.startswith("error: ") and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    monkeypatch.setenv("INFONCE_LAB_DEBUG", "1")
    proc = subprocess.run([sys.executable, "-c", STAGE, kind], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == code and "Traceback" in proc.stderr and says in proc.stderr
    assert errno.ENOSPC  # the errno the disk case raises


@pytest.mark.parametrize(("stage", "prefix"), [("pretrain", ""), ("pretrain_primary", ""),
                                                ("text_pretrain", "text.")])
def test_every_section_a_model_s_fingerprint_covers_makes_dvc_retrain_it(repo_root, stage,
                                                                          prefix):
    """A model is refused when params.yaml now gives its run another fingerprint; DVC must then
    re-run its training stage, or `dvc repro` would leave a model every reader refuses."""
    import yaml

    listed = set(yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"][stage]["params"])
    model = "encoder" if prefix else "backbone"
    covered = {f"{prefix}datasets.${{item.dataset}}", f"{prefix}{model}s.${{item.{model}}}",
               f"{prefix}training", "losses.${item.loss}", "schedules.${item.schedule}"}
    assert covered <= listed, covered - listed
