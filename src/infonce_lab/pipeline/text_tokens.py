"""The tokenize_text stage: a text corpus's training sentences tokenised once by one encoder's
tokenizer at ``text.training.max_length`` → ``data/tokens/text/<dataset>/<encoder>/`` (a
``datasets`` folder + manifest), and the check text_pretrain makes before it trains on it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from infonce_lab.data.text import TRAIN_TXT, load_text_raw, verify_text_manifest
from infonce_lab.data.text_tokens import load_tokens, save_tokens, tokenise_sentences
from infonce_lab.params import Params
from infonce_lab.pipeline import paths

if TYPE_CHECKING:
    from datasets import Dataset


def _expected(params: Params, dataset: str, encoder: str) -> dict[str, Any]:
    """What the tokens must have been made from: the raw corpus's training file, the tokenizer's
    source and the max length."""
    raw = verify_text_manifest(paths.text_raw_dir(dataset))
    return {"dataset": dataset, "encoder": encoder,
            "source": params.text.encoders[encoder].source,
            "max_length": params.text.training.max_length,
            "train_sha256": raw["files"][TRAIN_TXT]}


def tokenize_text(params: Params, dataset: str, encoder: str) -> dict[str, Any]:
    """Tokenise ``dataset``'s training sentences with ``encoder``'s tokenizer; the stage's line."""
    from infonce_lab.models.text import load_tokenizer, use_offline_hub_if_local

    study = params.text.study
    for flag, name, allowed in (("dataset", dataset, study.datasets),
                                ("encoder", encoder, study.encoders)):
        if name not in allowed:
            raise ValueError(f"--{flag} {name!r}: not in text.study.{flag}s "
                             f"({', '.join(allowed)})")
    enc_cfg = params.text.encoders[encoder]
    use_offline_hub_if_local([enc_cfg])
    expected = _expected(params, dataset, encoder)
    corpus = load_text_raw(paths.text_raw_dir(dataset))
    tokens = tokenise_sentences(corpus.train, load_tokenizer(enc_cfg), expected["max_length"],
                                enc_cfg.source)
    out = paths.text_tokens_dir(dataset, encoder)
    manifest = save_tokens(tokens, out, expected)
    return {"dataset": dataset, "encoder": encoder, "sentences": manifest["n_rows"],
            "max_length": expected["max_length"], "out": str(out)}


def tokens_for(params: Params, dataset: str, encoder: str) -> Dataset:
    """The tokenised corpus text_pretrain trains on, refused when it was not made from today's
    corpus, tokenizer source and max length (a folder copied by hand, or a stage skipped)."""
    out = paths.text_tokens_dir(dataset, encoder)
    tokens, manifest = load_tokens(out)
    expected = _expected(params, dataset, encoder)
    stale = {k: (manifest["extra"].get(k), v) for k, v in expected.items()
             if manifest["extra"].get(k) != v}
    if stale:
        raise ValueError(f"{out}: tokenised from other inputs ("
                         + "; ".join(f"{k}: {a!r}, now {b!r}" for k, (a, b) in stale.items())
                         + f"); run `dvc repro tokenize_text@{dataset}-{encoder}`")
    return tokens
