"""Word-crop views for the text tail banks: what a view may contain, and the bank's layout."""

from __future__ import annotations

import numpy as np
import pytest

from infonce_lab.data.text_views import bank_views, word_crop

SENTENCE = "the quick brown fox jumps over the lazy dog again"


def _is_subsequence_of_a_run(view: list[str], words: list[str], run: int) -> bool:
    """Some contiguous run of ``run`` words contains ``view`` as a subsequence."""
    for start in range(len(words) - run + 1):
        it = iter(words[start:start + run])
        if all(w in it for w in view):
            return True
    return False


def test_a_view_is_a_thinned_contiguous_crop():
    words = SENTENCE.split()
    rng = np.random.default_rng(0)
    for _ in range(200):
        view = word_crop(SENTENCE, rng, (0.5, 0.8), 0.2).split()
        assert 1 <= len(view) <= 8  # ⌈0.8 · 10⌉
        assert _is_subsequence_of_a_run(view, words, 8)


def test_full_crop_without_dropout_is_the_sentence_and_dropout_keeps_one_word():
    rng = np.random.default_rng(1)
    assert word_crop(SENTENCE, rng, (1.0, 1.0), 0.0) == SENTENCE
    assert all(len(word_crop(SENTENCE, rng, (0.1, 0.1), 0.999).split()) == 1 for _ in range(50))


def test_dropout_rate_is_the_share_of_words_dropped():
    rng = np.random.default_rng(2)
    long = " ".join(f"w{i}" for i in range(1000))
    kept = np.mean([len(word_crop(long, rng, (1.0, 1.0), 0.3).split()) for _ in range(40)])
    assert kept == pytest.approx(700, rel=0.03)


def test_bank_layout_first_views_then_second_views_of_each_batch():
    sentences = [f"s{i} " + " ".join(f"t{i}_{j}" for j in range(6)) for i in range(50)]
    texts, chosen = bank_views(sentences, batches=3, batch_size=8, crop=(0.5, 1.0),
                               word_dropout=0.1, seed=0)
    assert chosen.shape == (3, 8) and len(texts) == 3 * 2 * 8
    assert all(len(set(row)) == 8 for row in chosen)  # without replacement within a batch
    for k in range(3):
        for v in range(2):
            for j in range(8):
                owner = sentences[chosen[k, j]].split()
                assert set(texts[16 * k + 8 * v + j].split()) <= set(owner)
    again, chosen2 = bank_views(sentences, 3, 8, (0.5, 1.0), 0.1, seed=0)
    assert again == texts and np.array_equal(chosen, chosen2)  # seeded
    with pytest.raises(ValueError, match="at least that many"):
        bank_views(sentences, 1, 51, (0.5, 1.0), 0.1, 0)
