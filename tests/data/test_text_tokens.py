"""The tokenised corpus (a ``datasets`` folder) gives the SimCSE loop the very tensors that
tokenising each batch gave, survives save/load byte for byte, and is refused when corrupt or made
from other inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infonce_lab.data.text import gensim_corpus
from infonce_lab.data.text_tokens import (
    fingerprint,
    load_tokens,
    save_tokens,
    tokenise_sentences,
)
from infonce_lab.models.text import load_tokenizer, tokenize
from infonce_lab.params import GensimTextDataset, TransformerEncoderConfig
from infonce_lab.train.text_source import SentencePairs


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(TransformerEncoderConfig())   # MiniLM's, shipped offline


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    cfg = GensimTextDataset(train_sources=["lee_background"], max_sentences=600, seed=1)
    return gensim_corpus(cfg).train


def test_batches_from_the_tokens_equal_tokenising_each_batch(tokenizer, sentences) -> None:
    source = SentencePairs(tokenise_sentences(sentences, tokenizer, 32), tokenizer,
                           torch.device("cpu"), seed=5)
    rng = np.random.default_rng(0)
    for size in (1, 7, 64):
        idx = torch.from_numpy(rng.permutation(len(sentences))[:size])
        batch = [sentences[i] for i in idx.tolist()]
        want = tokenize(tokenizer, batch + batch, 32)
        got = source.inputs(idx)
        assert set(got) == set(want)
        for k in want:
            assert torch.equal(got[k], want[k]), k
    # Truncation is in the artifact: no row is longer than max_length.
    assert max(len(r) for r in tokenise_sentences(sentences, tokenizer, 8)["input_ids"]) == 8


def test_saved_tokens_load_identically_and_deterministically(tmp_path, tokenizer, sentences):
    a = save_tokens(tokenise_sentences(sentences, tokenizer, 32), tmp_path / "a", {"k": 1})
    b = save_tokens(tokenise_sentences(sentences, tokenizer, 32), tmp_path / "b", {"k": 1})
    assert a["files"] == b["files"]          # same inputs, same bytes
    loaded, manifest = load_tokens(tmp_path / "a")
    assert manifest["extra"] == {"k": 1} and len(loaded) == len(sentences)
    assert loaded[:5]["input_ids"] == tokenizer(sentences[:5], truncation=True,
                                                max_length=32)["input_ids"]
    assert fingerprint(sentences, "m", 32) != fingerprint(sentences, "m", 16)
    assert fingerprint(sentences, "m", 32) != fingerprint(sentences[1:], "m", 32)


def test_a_corrupt_token_file_is_refused_with_its_name(tmp_path, tokenizer, sentences) -> None:
    save_tokens(tokenise_sentences(sentences[:50], tokenizer, 32), tmp_path / "t", {})
    arrow = next((tmp_path / "t" / "dataset").glob("*.arrow"))
    data = bytearray(arrow.read_bytes())
    data[-10] ^= 0xFF
    arrow.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"{arrow.name}: checksum mismatch"):
        load_tokens(tmp_path / "t")
