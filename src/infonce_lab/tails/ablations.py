"""The link test's ablations (WEINCE App. D.6, D.1): does a heavy-tailed (Fréchet) component
help, and how do λ̂ and Δ̄ move as the choice set gets easier or the hard set is mined from larger
pools?

Each fits the two links on the held-in anchors and reports the held-out mean gain per anchor Δ̄,
exactly like the main test (``held_out_gain``). Scores are (anchors, candidates) with the winner
(the positive) at column 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from infonce_lab.tails.link import (
    LinkFit,
    _bounds,
    cluster_influence,
    cluster_robust_se,
    features,
    held_out_gain,
    lambda_gradient,
)


def frechet_ablation(scores: np.ndarray, held_in: np.ndarray, placement: str = "inside",
                     batch_ids: np.ndarray | None = None) -> dict[str, float | int | None]:
    """Δ̄_{F−0} (Fréchet-only blend over softmax), Δ̄_{WF−W} (adding the Fréchet feature to the
    Weibull blend) and the weights of the joint Weibull + Fréchet fit. The Fréchet coordinate for
    cosines is log(1 + s), our proposal (App. D.6 does not give its ρ).

    With ``batch_ids``: Δ̄_{WF−W}'s and Δ̄_{F−0}'s batch-clustered se over the held-out batches, and the
    score test of a Fréchet component at the Weibull fit (:func:`frechet_score`), which says how
    much Fréchet weight the data could see at all."""
    _, frechet, d_f0 = held_out_gain(scores, held_in, "softmax", "frechet", placement)
    weibull, joint, d_wfw = held_out_gain(scores, held_in, "weibull", "weibull_frechet", placement)
    out: dict[str, float | int | None] = {
        "delta_frechet_vs_softmax": float(d_f0.mean()),
        "delta_joint_vs_weibull": float(d_wfw.mean()),
        "lambda_frechet_alone": frechet.lambdas["h"],
        "lambda_frechet_joint": joint.lambdas["h"],
        "lambda_weibull_joint": joint.lambdas["g"],
    }
    if batch_ids is not None:
        batch = np.asarray(batch_ids)
        se, df = _clustered_se(d_wfw, batch[~held_in])
        out["delta_joint_vs_weibull_se"], out["delta_joint_vs_weibull_df"] = se, df
        se, df = _clustered_se(d_f0, batch[~held_in])
        out["delta_frechet_vs_softmax_se"], out["delta_frechet_vs_softmax_df"] = se, df
        out.update(frechet_score(scores[held_in], weibull, batch[held_in]))
    return out


def _clustered_se(values: np.ndarray, clusters: np.ndarray) -> tuple[float | None, int]:
    """se of the mean of per-cluster means (equal cluster sizes: the mean itself), df = G − 1."""
    ids, inv = np.unique(clusters, return_inverse=True)
    means = np.bincount(inv, weights=values) / np.bincount(inv)
    if len(ids) < 2:
        return None, 0
    return float(np.std(means, ddof=1) / np.sqrt(len(ids))), int(len(ids) - 1)


def frechet_score(scores: np.ndarray, weibull: LinkFit, batch_ids: np.ndarray,
                  ) -> dict[str, float | int | None]:
    """The Fréchet weight the data point to, at the Weibull fit: a score (Rao) test of the
    weight w_h of log(1 + s) added to the fitted Weibull blend, with cluster-robust errors.

    At the Weibull MLE the score of (w_s, w_g) vanishes, so the efficient score for w_h is its
    plain score U_h; its information I_eff is the Schur complement of the (s, g) block in
    Σ_i Cov_p(f_i) — what log(1 + s) carries *beyond* s and −log(1 − s) among the candidates
    that compete (weighted by the link's probabilities). The one-step estimate w̃_h = U_h/I_eff
    is signed (its sign says which way the data pull; the constrained fit stops at 0) and, in
    blend-weight units (×τ̂ inside), ``frechet_lambda_score`` with a cluster-robust se over
    the batches (df = G − 1). ``frechet_collinearity_r2`` = 1 − I_eff/Var_p(h): near 1 when
    log(1 + s) is nearly a linear function of (s, g) where the competition happens, which is
    what makes a Fréchet component invisible to the ablation."""
    s = np.asarray(scores, dtype=np.float64)
    ws = weibull.weights
    f = torch.from_numpy(features(s, ("s", "g", "h")))
    w = torch.from_numpy(np.r_[ws, 0.0])
    p = torch.softmax(torch.tensordot(w, f, dims=1), dim=1)
    mean = (f * p).sum(dim=2)
    u = (f[:, :, 0] - mean).numpy().T  # the winner (the positive) is column 0
    info = (torch.tensordot(f * p, f, dims=([1, 2], [1, 2])) - mean @ mean.T).numpy()
    lo, hi = _bounds(weibull.model, weibull.placement)
    free = np.r_[~((ws <= lo) | (ws >= hi)), False]  # (s, g) off their bounds; h is tested
    a = info[np.ix_(free, free)]
    c = info[free, 2]
    coef = np.linalg.lstsq(a, c, rcond=None)[0] if free.any() else np.zeros(0)
    i_eff = float(info[2, 2] - c @ coef)
    u_eff = u[:, 2] - u[:, free] @ coef
    ids, inv = np.unique(np.asarray(batch_ids), return_inverse=True)
    u_b = np.bincount(inv, weights=u_eff)
    g = len(ids)
    r2 = 1.0 - i_eff / float(info[2, 2]) if info[2, 2] > 0 else None
    # inside, λ_F is on the scale of τ̂ = 1/Σw, undefined where the fit put every weight at 0
    undefined_scale = weibull.placement == "inside" and not float(ws.sum()) > 0
    if i_eff <= 0 or g < 2 or undefined_scale:
        return {"frechet_lambda_score": None, "frechet_lambda_score_se": None,
                "frechet_lambda_score_df": g - 1, "frechet_collinearity_r2": r2}
    scale = 1.0 / float(ws.sum()) if weibull.placement == "inside" else 1.0  # τ̂ inside
    return {"frechet_lambda_score": float(u_eff.sum() / i_eff * scale),
            "frechet_lambda_score_se": cluster_robust_se(u_b) / i_eff * scale,
            "frechet_lambda_score_df": g - 1, "frechet_collinearity_r2": r2}


def _choice_gain(choice: np.ndarray, held_in: np.ndarray, placement: str,
                 batch_ids: np.ndarray | None = None,
                 ) -> tuple[dict[str, float | None], np.ndarray, np.ndarray | None]:
    """One choice set's fits: the row (λ̂, τ̂s, Δ̄), the held-out Δ_i, and — with ``batch_ids`` —
    λ̂'s influence per held-in batch (∇λ·H⁻¹·U_b, the sandwich's building block; 0 for a λ̂ on a
    bound of its fit, which a small perturbation of the data leaves there)."""
    fit0, fit1, delta = held_out_gain(choice, held_in, "softmax", "weibull", placement)
    lam = fit1.lambdas["g"]
    lo, hi = _bounds(fit1.model, placement)
    row = {"lambda_hat": lam if lam is not None and np.isfinite(lam) else None,
           "tau1_hat": fit1.tau, "tau0_hat": fit0.tau, "delta_mean": float(delta.mean()),
           # λ̂ on a bound of its fit (0, pure softmax; 1, pure Weibit; τ at its cap)
           "lambda_boundary": bool(((fit1.weights <= lo) | (fit1.weights >= hi)).any())}
    infl = None
    if batch_ids is not None and row["lambda_hat"] is not None:
        psi, _, _ = cluster_influence(choice[held_in], None, fit1, np.asarray(batch_ids)[held_in])
        infl = psi @ lambda_gradient(fit1)
    return row, delta, infl


def _sweep(axis: str, values: list[int], choice_of: Callable[[int], np.ndarray],
           held_in: np.ndarray, placement: str, return_deltas: bool,
           batch_ids: np.ndarray | None) -> Any:
    """The choice set ``choice_of(v)`` fitted at every value v of the ablation's axis: the rows,
    and with ``return_deltas`` the held-out Δ_i of every v, (len(values), held-out anchors), and
    λ̂'s influence per held-in batch of every v (None without ``batch_ids``)."""
    rows, deltas, infl = [], [], []
    for v in values:
        row, delta, psi = _choice_gain(choice_of(v), held_in, placement, batch_ids)
        rows.append({axis: int(v), **row})
        deltas.append(delta)
        infl.append(psi)
    return (rows, np.array(deltas), infl) if return_deltas else rows


def hardness_ablation(scores: np.ndarray, held_in: np.ndarray, ks: list[int],
                      placement: str = "inside", return_deltas: bool = False,
                      batch_ids: np.ndarray | None = None) -> Any:
    """WEINCE App. D.1, Fig. 7: the choice set is the positive plus each anchor's k hardest
    negatives of its batch; growing k adds easier negatives (the paper: λ̂ and Δ̄ fall).
    ``return_deltas``: see :func:`_sweep`."""
    negatives = -np.sort(-scores[:, 1:], axis=1)
    for k in ks:
        if not 1 <= k <= negatives.shape[1]:
            raise ValueError(f"hardness k = {k} must lie in [1, {negatives.shape[1]}] (the negatives "
                             "per anchor of the bank)")
    return _sweep("k", ks, lambda k: np.concatenate([scores[:, :1], negatives[:, :k]], 1),
                  held_in, placement, return_deltas, batch_ids)


def pool_size_ablation(s_pos: np.ndarray, pool: np.ndarray, held_in: np.ndarray,
                       sizes: list[int], hard_k: int, placement: str = "inside",
                       return_deltas: bool = False, batch_ids: np.ndarray | None = None) -> Any:
    """WEINCE App. D.1, Fig. 8: the choice set is the positive plus the ``hard_k`` highest-scoring
    negatives of the first m columns of each anchor's pool; growing m mines closer to the cap
    (the paper: λ̂ rises)."""
    for m in sizes:
        if not hard_k <= m <= pool.shape[1]:
            raise ValueError(f"pool size {m} must lie in [hard_k = {hard_k}, {pool.shape[1]}]")

    def choice(m: int) -> np.ndarray:
        return np.concatenate([s_pos[:, None], -np.sort(-pool[:, :m], axis=1)[:, :hard_k]], 1)

    return _sweep("pool", sizes, choice, held_in, placement, return_deltas, batch_ids)


def ablation_trend(rows: list[dict[str, Any]], deltas: np.ndarray, axis: str,
                   out_batches: np.ndarray, lambda_influence: list[np.ndarray | None] | None = None,
                   ) -> dict[str, float | int | None]:
    """The ablation's trend as slopes per doubling of its axis (k or the pool size): least
    squares of λ̂ and of Δ̄ on log2(axis), over the points where both fits are defined (τ̂0 and
    λ̂ exist: at τ̂0 → ∞ the softmax fit is degenerate — the positive no likelier than the
    mined negatives — and Δ̄ there compares against a uniform link, not a softmax).

    Δ̄'s slope has a batch-clustered se (each held-out anchor's slope contrast Σ_j c_j Δ_ij,
    averaged per batch; df = G − 1). λ̂'s slope gets a cluster-robust se from the influences
    (``lambda_influence``: per point, per held-in batch): Var = G/(G − 1)·Σ_b (Σ_j c_j ψ_jb)²,
    the fits sharing their held-in batches; a λ̂ on a bound (pure Weibit at the hardest sets)
    contributes no influence, so ``*_lambda_boundary_points`` says how many were held fixed.
    The Spearman correlations are kept beside them (descriptive)."""
    from scipy.stats import spearmanr  # heavy import, only where used

    used = [j for j, r in enumerate(rows)
            if r["lambda_hat"] is not None and r["tau0_hat"] is not None]
    out: dict[str, float | int | None] = {f"{axis}_lambda_points": len(used),
                                          f"{axis}_delta_points": len(used)}
    x = np.log2([rows[j][_AXIS[axis]] for j in used])
    lam = np.array([rows[j]["lambda_hat"] for j in used], dtype=np.float64)
    dmean = np.array([rows[j]["delta_mean"] for j in used], dtype=np.float64)
    trend: dict[str, float | int | None] = dict.fromkeys(
        ("lambda_slope", "lambda_slope_se", "lambda_slope_df", "delta_slope", "delta_slope_se",
         "delta_slope_df", "lambda_boundary_points"))
    if len(used) >= 3:  # two points fix a line: no trend to estimate beside its noise
        c = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
        contrast = c @ deltas[used]  # per held-out anchor
        se, df = _clustered_se(contrast, out_batches)
        lam_se, lam_df = None, None
        infl = [lambda_influence[j] for j in used] if lambda_influence is not None else None
        if infl is not None and all(v is not None for v in infl):
            per_batch = c @ np.array(infl)  # (held-in batches,)
            g = per_batch.size
            if g > 1:
                lam_se, lam_df = cluster_robust_se(per_batch), g - 1
        trend.update(lambda_slope=float(c @ lam), lambda_slope_se=lam_se, lambda_slope_df=lam_df,
                     delta_slope=float(c @ dmean), delta_slope_se=se, delta_slope_df=df,
                     lambda_boundary_points=int(sum(rows[j]["lambda_boundary"] for j in used)))
    out.update({f"{axis}_{key}": v for key, v in trend.items()})
    for key, values in (("lambda", lam), ("delta", dmean)):
        ok = len(used) > 2 and np.ptp(values) > 0  # else there is no ordering to test
        out[f"{axis}_{key}_spearman"] = float(spearmanr(x, values).statistic) if ok else None
    return out


_AXIS = {"hardness": "k", "pool": "pool"}
