"""A text corpus in memory: the training sentences and the graded pairs and labelled texts it is
evaluated on, as every text source (gensim's files, SimCSE's files, the hub) gives them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairSet:
    """Graded sentence/document pairs (STS-style)."""

    name: str                    # e.g. "lee50", "stsb_test"
    texts: list[str]
    pairs: np.ndarray            # (P, 2) int64 indices into texts
    scores: np.ndarray           # (P,) float64 gold similarity on the set's own scale
    scale: tuple[float, float]   # (min, max) of the gold scale: Lee (0, 1), STS-B (0, 5)


@dataclass(frozen=True)
class LabelledTexts:
    texts: list[str]
    labels: np.ndarray           # (n,) int64
    classes: list[str]


@dataclass(frozen=True)
class TextCorpus:
    train: list[str]             # unsupervised training sentences
    sts_test: PairSet            # the reported figure
    sts_val: PairSet | None      # for checkpoint selection (None for the offline default)
    labelled: LabelledTexts | None   # probe / kNN
    source: str                  # human-readable provenance


def normalise_space(text: str) -> str:
    return " ".join(text.split())


def pairset(name: str, rows: list[tuple[str, str, float]], scale: tuple[float, float]) -> PairSet:
    index: dict[str, int] = {}
    pairs = [[index.setdefault(a, len(index)), index.setdefault(b, len(index))] for a, b, _ in rows]
    return PairSet(name=name, texts=list(index),
                   pairs=np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
                   scores=np.asarray([s for _, _, s in rows], dtype=np.float64), scale=scale)
