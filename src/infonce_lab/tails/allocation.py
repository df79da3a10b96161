"""Where the gradient goes: risk versus softmax and Weibit gradient mass per score bin (SPECS B.9).

For an anchor with positive score s₊ and a subset of negatives, the softmax (InfoNCE) loss puts
∂L/∂s_j = p_j/τ on negative j, p = softmax(s/τ) over {positive} ∪ subset; the Weibit loss, with
logits −β·log(1 − s), puts β·p_j/(1 − s_j) on it. The *risk* is where the failures are: in each
subset where some negative beats the positive, the culprit (arg-max negative) is recorded.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-6


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_negative_grads(s_pos: np.ndarray, s_neg: np.ndarray, tau: float) -> np.ndarray:
    """∂L/∂s_j for each negative under −log softmax(s/τ)[positive]; shapes (...,) and (..., K)."""
    logits = np.concatenate([s_pos[..., None], s_neg], axis=-1) / tau
    return _softmax(logits)[..., 1:] / tau


def weibit_negative_grads(s_pos: np.ndarray, s_neg: np.ndarray, beta: float) -> np.ndarray:
    """∂L/∂s_j for each negative under −log softmax(−β·log(1 − s))[positive]."""
    s = np.minimum(np.concatenate([s_pos[..., None], s_neg], axis=-1), 1 - EPS)
    p = _softmax(-beta * np.log1p(-s))
    return beta * p[..., 1:] / (1.0 - s[..., 1:])


def gradient_allocation(
    s_pos: np.ndarray, bank: np.ndarray, k: int = 255, subsets: int = 20,
    bins: np.ndarray | None = None, tau: float = 0.5, beta: float = 4.0, seed: int = 0,
) -> dict[str, list[float]]:
    """Per score bin: the share of failures whose culprit falls there, and the shares of softmax
    and Weibit gradient mass on negatives there. ``bank`` is (anchors, N) negative scores."""
    s_pos = np.asarray(s_pos, dtype=np.float64)
    bank = np.asarray(bank, dtype=np.float64)
    a, n = bank.shape
    if k > n:
        raise ValueError(f"subset size k = {k} exceeds the bank of {n} negatives")
    bins = np.linspace(-1.0, 1.0, 41) if bins is None else np.asarray(bins)
    rng = np.random.default_rng(seed)
    # (anchors, subsets, k) draws without replacement: the first k of a random permutation.
    idx = np.argsort(rng.random((a, subsets, n)), axis=2)[:, :, :k]
    sub = np.take_along_axis(bank[:, None, :], idx, axis=2)
    pos = np.broadcast_to(s_pos[:, None], (a, subsets))
    worst = sub.max(axis=2)
    culprits = worst[worst > pos]
    g_sm = softmax_negative_grads(pos, sub, tau)
    g_w = weibit_negative_grads(pos, sub, beta)

    def share(values: np.ndarray, weights: np.ndarray | None) -> list[float]:
        h, _ = np.histogram(values, bins=bins, weights=weights)
        total = h.sum()
        return (h / total if total > 0 else h).tolist()

    return {
        "bin_edges": bins.tolist(),
        "risk": share(culprits, None),
        "softmax_grad": share(sub.ravel(), g_sm.ravel()),
        "weibit_grad": share(sub.ravel(), g_w.ravel()),
        "failure_rate": float((worst > pos).mean()),
    }
