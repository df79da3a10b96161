"""Where the gradient goes: risk versus softmax and Weibit gradient mass per score bin (WEINCE
App. C.2, Fig. 6).

For an anchor with positive score s₊ and a subset of negatives, the softmax (InfoNCE) loss puts
∂L/∂s_j = p_j/τ on negative j, p = softmax(s/τ) over {positive} ∪ subset; the Weibit loss, with
logits −β·log(1 − s), puts β·p_j/(1 − s_j) on it. The *risk* is where the failures are: in each
subset where some negative beats the positive, the culprit (arg-max negative) is recorded.
"""

from __future__ import annotations

from typing import Any

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
    per_anchor: bool = False,
) -> dict[str, Any]:
    """Per score bin: the share of failures whose culprit falls there, and the shares of softmax
    and Weibit gradient mass on negatives there. ``bank`` is (anchors, N) negative scores.
    ``per_anchor``: also each anchor's unnormalised histograms ("per_anchor": risk counts and
    gradient masses, (anchors, bins) each), from which a bootstrap over anchors reweights."""
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
    failed = worst > pos
    g_sm = softmax_negative_grads(pos, sub, tau)
    g_w = weibit_negative_grads(pos, sub, beta)
    nb = len(bins) - 1
    rows = np.repeat(np.arange(a), subsets * k)
    cell = np.clip(np.searchsorted(bins, sub.ravel(), side="right") - 1, 0, nb - 1)
    inside = (sub.ravel() >= bins[0]) & (sub.ravel() <= bins[-1])

    def hist(weights: np.ndarray, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        return np.bincount(r * nb + c, weights=weights, minlength=a * nb).reshape(a, nb)

    sm_a = hist(g_sm.ravel()[inside], rows[inside], cell[inside])
    w_a = hist(g_w.ravel()[inside], rows[inside], cell[inside])
    cul = worst[failed]
    cul_ok = (cul >= bins[0]) & (cul <= bins[-1])
    cul_cell = np.clip(np.searchsorted(bins, cul, side="right") - 1, 0, nb - 1)
    risk_a = hist(np.ones(int(cul_ok.sum())), np.nonzero(failed)[0][cul_ok], cul_cell[cul_ok])

    def share(h: np.ndarray) -> list[float]:
        total = h.sum()
        return (h.sum(axis=0) / total if total > 0 else h.sum(axis=0)).tolist()

    out: dict[str, Any] = {
        "bin_edges": bins.tolist(),
        "risk": share(risk_a),
        "softmax_grad": share(sm_a),
        "weibit_grad": share(w_a),
        "failure_rate": float(failed.mean()),
    }
    if per_anchor:
        out["per_anchor"] = {"risk": risk_a, "softmax_grad": sm_a, "weibit_grad": w_a}
    return out


def tv_to_risk(risk: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Total-variation distance between the pooled risk and gradient shares, for every row of
    anchor weights: ``risk``/``grad`` are (replicates, bins) weighted sums of the anchors'
    histograms; rows without failures give NaN."""
    r_tot = risk.sum(axis=1, keepdims=True)
    g_tot = grad.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 0.5 * np.abs(risk / r_tot - grad / g_tot).sum(axis=1)
