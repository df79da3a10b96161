"""Sentence-embedding measures (WEINCE §4.2; Gao et al. 2021, SimCSE §5 and §6): STS Spearman×100 between
each pair's cosine and its gold score (scipy), and SimCSE's geometry — alignment over the gold
pairs near the top of the scale (STS-B: above 4 of 5), uniformity and effective rank over every
evaluation text. Numbers in, numbers out; the text evaluation stage applies them to a corpus with the
study's settings.
"""

from __future__ import annotations

import numpy as np
import torch

from infonce_lab.evaluation.geometry import alignment, effective_rank, uniformity


def pair_cosines(emb: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    x = np.asarray(emb, dtype=np.float64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return np.einsum("ij,ij->i", x[pairs[:, 0]], x[pairs[:, 1]])


def sts_spearman(emb: np.ndarray, pairs: np.ndarray, scores: np.ndarray) -> float:
    """Spearman's ρ × 100 of cosine similarity against the gold scores."""
    from scipy.stats import spearmanr

    return 100.0 * float(spearmanr(pair_cosines(emb, pairs), scores).statistic)


def text_geometry(emb: np.ndarray, pairs: np.ndarray, scores: np.ndarray,
                  scale: tuple[float, float], min_gold_fraction: float) -> dict[str, float | None]:
    x = torch.as_tensor(np.asarray(emb), dtype=torch.float64)
    lo, hi = scale
    close = pairs[scores >= lo + min_gold_fraction * (hi - lo)]
    out: dict[str, float | None] = {
        "uniformity": float(uniformity(x)),
        "effective_rank": effective_rank(x),
        "n_align_pairs": float(len(close)),
        # No gold pair reaches the threshold: alignment is undefined, not zero.
        "alignment": float(alignment(x[close[:, 0]], x[close[:, 1]])) if len(close) else None,
    }
    return out
