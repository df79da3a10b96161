"""tokenize_text writes the folder text_pretrain reads; text_pretrain refuses tokens made from
another corpus, tokenizer or max length, and says which stage makes them again."""

from __future__ import annotations

import pytest

from infonce_lab.data.text import gensim_corpus, materialise_text
from infonce_lab.params import GensimTextDataset, parse_params
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.text_tokens import tokenize_text, tokens_for


def test_tokens_are_checked_against_what_they_were_made_from(tmp_path, monkeypatch, raw):
    monkeypatch.chdir(tmp_path)
    corpus = gensim_corpus(GensimTextDataset(train_sources=["lee_background"], max_sentences=80))
    materialise_text(corpus, paths.text_raw_dir("gensim_lee"))
    params = parse_params(raw)
    line = tokenize_text(params, "gensim_lee", "minilm")
    assert line["sentences"] == 80 and line["max_length"] == params.text.training.max_length
    assert len(tokens_for(params, "gensim_lee", "minilm")) == 80

    raw["text"]["training"]["max_length"] = 16
    with pytest.raises(ValueError, match=r"max_length: 32, now 16.*dvc repro "
                                         r"tokenize_text@gensim_lee-minilm"):
        tokens_for(parse_params(raw), "gensim_lee", "minilm")
    # A new corpus under the same name: its training file's digest differs.
    other = gensim_corpus(GensimTextDataset(train_sources=["lee_background"], max_sentences=81))
    materialise_text(other, paths.text_raw_dir("gensim_lee"))
    with pytest.raises(ValueError, match="train_sha256"):
        tokens_for(params, "gensim_lee", "minilm")
