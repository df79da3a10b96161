"""The training sentences of a text corpus tokenised once per tokenizer, as a Hugging Face
``datasets.Dataset`` saved to disk: the artifact the SimCSE loop reads (Gao et al. 2021, §3 train
at max length 32, so truncation is part of the artifact).

Tokenising once instead of at every step is the same tensors (a test checks it batch by batch):
the loop pads the stored ids of a batch to its longest sentence with the tokenizer's own ``pad``,
which is what ``tokenizer(texts, padding=True, truncation=True)`` does in one call.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infonce_lab.data.splits import verify_manifest
from infonce_lab.io import atomic_dir, sha256_file, write_json_atomic

if TYPE_CHECKING:
    from datasets import Dataset

DATASET_DIR = "dataset"
MANIFEST = "MANIFEST.json"


def fingerprint(sentences: list[str], tokenizer_name: str, max_length: int) -> str:
    """A fixed ``datasets`` fingerprint from what the tokens depend on: the same corpus, tokenizer
    and max length give the same one on every machine (``datasets`` would otherwise hash the
    mapped function, pickled, which differs across library versions)."""
    h = hashlib.sha256()
    h.update(json.dumps([tokenizer_name, max_length]).encode())
    for s in sentences:
        h.update(s.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:32]


def tokenise_sentences(sentences: list[str], tokenizer: Any, max_length: int,
                       tokenizer_name: str = "") -> Dataset:
    """``sentences`` tokenised (truncated at ``max_length``, unpadded) in one batched ``map``;
    kept in memory, so nothing lands in the ``datasets`` cache folder."""
    import datasets

    datasets.disable_progress_bars()   # one bar per map would fill CI logs
    raw = datasets.Dataset.from_dict({"text": sentences})
    return raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=max_length),
                   batched=True, remove_columns=["text"], keep_in_memory=True,
                   new_fingerprint=fingerprint(sentences, tokenizer_name, max_length))


def save_tokens(tokens: Dataset, out_dir: str | Path, extra: dict[str, Any]) -> dict[str, Any]:
    """Replace ``out_dir`` by ``tokens`` (``save_to_disk`` under ``dataset/``) and a manifest with
    the SHA-256 of each file, as the raw data's; return the manifest."""
    with atomic_dir(out_dir) as tmp:
        tokens.save_to_disk(str(tmp / DATASET_DIR))
        files = sorted(p.relative_to(tmp).as_posix() for p in (tmp / DATASET_DIR).rglob("*")
                       if p.is_file())
        manifest = {"kind": "text_tokens", "n_rows": len(tokens),
                    "columns": sorted(tokens.column_names),
                    "files": {f: sha256_file(tmp / f) for f in files}, "extra": extra}
        write_json_atomic(tmp / MANIFEST, manifest)
    return manifest


def load_tokens(data_dir: str | Path) -> tuple[Dataset, dict[str, Any]]:
    """The tokenised corpus in ``data_dir`` after checking its manifest, held in memory, and the
    manifest."""
    import datasets

    data_dir = Path(data_dir)
    manifest = verify_manifest(data_dir, (f"{DATASET_DIR}/state.json",), "dvc repro tokenize_text")
    return datasets.load_from_disk(str(data_dir / DATASET_DIR), keep_in_memory=True), manifest


__all__ = ["fingerprint", "tokenise_sentences", "save_tokens", "load_tokens"]
