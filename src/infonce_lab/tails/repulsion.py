"""Where InfoNCE's repulsion goes as the temperature changes (Wang & Isola's essay, §5, "the
hardness-aware property of temperature", after Wang & Liu 2021).

The repulsive gradient on a query u is (1/τ)·Σ_j P_j·v_j over its negatives, with P the softmax
of the scores s/τ over the positive and the negatives; the share of that gradient mass on the
negatives j ∈ H is Σ_{j∈H} P_j / Σ_{j∈neg} P_j (1/τ is common to every negative). The essay's
claim: at low τ the mass is "sharply peaked on the nearest negative samples", at high τ it
approaches uniform. Measured here on the diagnose stage's link bank (each anchor's candidates,
the positive first) for a grid of τ, with H = each anchor's hardest ``hard_fraction`` of its
negatives.
"""

from __future__ import annotations

import math

import numpy as np


def tau_key(tau: float) -> str:
    """The results-file key of one τ (a stable name, e.g. ``tau_0.07``)."""
    return f"tau_{tau:g}"


def repulsion_shares(scores: np.ndarray, batch_ids: np.ndarray, taus: list[float],
                     hard_fraction: float = 0.01) -> dict[str, object]:
    """Mean share of the repulsive mass on each anchor's hardest negatives, per τ, with its
    batch-clustered se (anchors of one batch share its draw; df = batches − 1), and the rise of
    the share from each τ to the next lower one (``rise``: share(τ_lower) − share(τ), with se).

    At fixed scores the share of any top set under softmax(s/τ) can only rise as τ falls
    (d/dβ of its log is E_top[s] − E_all[s] ≥ 0, β = 1/τ), so the rise is a property of the
    softmax, not of the encoder; what the encoder decides is how large the share is at a given
    low τ — whether the repulsion is *concentrated* there or still spread over many negatives."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] < 3:
        raise ValueError(f"scores must be (anchors, candidates ≥ 3), got {s.shape}")
    if not 0 < hard_fraction < 1:
        raise ValueError(f"hard_fraction must lie in (0, 1), got {hard_fraction}")
    negatives = s.shape[1] - 1
    k = max(1, math.ceil(hard_fraction * negatives))
    order = np.sort(s[:, 1:], axis=1)[:, ::-1]  # each anchor's negatives, hardest first
    ids, inv = np.unique(np.asarray(batch_ids), return_inverse=True)
    counts = np.bincount(inv)
    g = len(ids)

    def clustered(values: np.ndarray) -> tuple[float, float | None]:
        means = np.bincount(inv, weights=values) / counts
        return float(means.mean()), (float(means.std(ddof=1) / math.sqrt(g)) if g > 1 else None)

    taus_sorted = sorted(taus, reverse=True)  # high τ first
    per_anchor: dict[float, np.ndarray] = {}
    share, share_se = {}, {}
    for tau in taus_sorted:
        z = order / tau
        e = np.exp(z - z[:, :1])  # the positive's P cancels from a share of the negatives' mass
        per_anchor[tau] = e[:, :k].sum(axis=1) / e.sum(axis=1)
        share[tau_key(tau)], share_se[tau_key(tau)] = clustered(per_anchor[tau])
    rise, rise_se = {}, {}
    for hi, lo in zip(taus_sorted[:-1], taus_sorted[1:], strict=True):
        rise[tau_key(lo)], rise_se[tau_key(lo)] = clustered(per_anchor[lo] - per_anchor[hi])
    return {"hard_k": k, "negatives": negatives, "uniform_share": k / negatives,
            "clusters": g, "df": g - 1, "share": share, "share_se": share_se,
            "rise": rise, "rise_se": rise_se}
