"""Word-crop views of sentences for the tail diagnostics' banks (WEINCE §2.3 on text).

SimCSE's own views — one sentence twice, dropout the only difference — make the positive the
nearest candidate of nearly every anchor, so the link test has nothing to fit. A word-crop view
keeps a contiguous run of U(lo, hi) of the sentence's words, then drops each of those words with
probability ``word_dropout`` (at least one word is kept): two views of one sentence share most of
their words but not all, as two random crops of one image share most of its pixels.
"""

from __future__ import annotations

import math

import numpy as np


def word_crop(sentence: str, rng: np.random.Generator, crop: tuple[float, float],
              word_dropout: float) -> str:
    """One view: a contiguous run of ⌈u·L⌉ of the L words (u ~ U(crop)), then word dropout."""
    words = sentence.split()
    if not words:
        return sentence
    n = max(1, min(len(words), math.ceil(rng.uniform(*crop) * len(words))))
    start = int(rng.integers(0, len(words) - n + 1))
    run = words[start:start + n]
    kept = [w for w, drop in zip(run, rng.random(len(run)) < word_dropout, strict=True) if not drop]
    return " ".join(kept or run[:1])


def bank_views(sentences: list[str], batches: int, batch_size: int, crop: tuple[float, float],
               word_dropout: float, seed: int) -> tuple[list[str], np.ndarray]:
    """The link bank's texts and the (batches, B) sentences drawn: per batch, B sentences without
    replacement, then the first views of the B, then their second views — the layout
    ``tails.banks.link_bank_from`` scores (the images' layout of ``link_draws``)."""
    if batch_size > len(sentences):
        raise ValueError(f"a bank batch of {batch_size} sentences needs at least that many; the "
                         f"corpus has {len(sentences)}")
    rng = np.random.default_rng(seed)
    chosen = np.stack([rng.permutation(len(sentences))[:batch_size] for _ in range(batches)])
    texts = [word_crop(sentences[i], rng, crop, word_dropout)
             for row in chosen for _view in range(2) for i in row]
    return texts, chosen
