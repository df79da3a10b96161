"""Every tail diagnostic for one frozen encoder (one checkpoint): the score banks, POT/GPD, the link
test with its ablations, and gradient allocation. No file I/O: the diagnose stage calls it once
per kept checkpoint and writes what it returns.

Returns two dicts: ``metrics`` (scalars with stable names, for ``dvc metrics diff`` and the
summary over seeds) and ``plots`` (the arrays behind the report's figures).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from infonce_lab.config import TailsConfig
from infonce_lab.tails.ablations import frechet_ablation, hardness_ablation, pool_size_ablation
from infonce_lab.tails.allocation import gradient_allocation
from infonce_lab.tails.banks import Augment, Embed, link_bank, pool_order, pool_scores, pot_scores
from infonce_lab.tails.link import fit_link, link_test, split_batches
from infonce_lab.tails.pot import (
    bootstrap_xi,
    endpoint,
    exceedances,
    fit_gpd,
    qq_points,
    xi_stability,
)


def diagnose_encoder(embed: Embed, images: torch.Tensor, augment: Augment,
                     cfg: TailsConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    gen = torch.Generator().manual_seed(cfg.seed)
    bank = link_bank(embed, images, augment, cfg.bank.batches, cfg.bank.batch_images, gen)
    scores = pot_scores(embed, images, augment, cfg.pot.repeats, cfg.pot.batch_images, gen)
    metrics: dict[str, Any] = {}
    plots: dict[str, Any] = {}
    metrics["pot"], plots["pot"] = pot_diagnostics(scores, cfg)

    link = cfg.link
    metrics["link"] = {}
    for i, placement in enumerate(link.placements):
        lrt = link.lrt_replicates if i == 0 or link.lrt_every_placement else 0
        res = link_test(bank.scores, bank.batch, placement=placement,
                        held_in_fraction=link.held_in_fraction, bootstrap=link.bootstrap,
                        lrt_replicates=lrt, cv_folds=link.cv_folds, seed=cfg.seed,
                        optimizer=link.optimizer)
        res["delta_ci_low"], res["delta_ci_high"] = res.pop("delta_ci")
        res.pop("placement")
        metrics["link"][placement] = res

    held_in = split_batches(bank.batch, link.held_in_fraction, cfg.seed)  # as link_test splits
    first = link.placements[0]
    ab = cfg.ablations
    if ab.frechet:
        metrics["frechet"] = frechet_ablation(bank.scores, held_in, first)
    pool_size = max([*ab.pool_sizes, cfg.allocation.pool])
    s_pos, pool = pool_scores(bank, pool_order(bank.image, pool_size, cfg.seed))
    plots["hardness"] = hardness_ablation(bank.scores, held_in, ab.hardness_ks, first)
    plots["pool_size"] = pool_size_ablation(s_pos, pool, held_in, ab.pool_sizes, ab.pool_hard_k,
                                            first)
    plots["ablation_placement"] = first
    metrics["ablations"] = {**_trend(plots["hardness"], "k", "hardness"),
                            **_trend(plots["pool_size"], "pool", "pool")}

    metrics["allocation"], plots["allocation"] = allocation_diagnostics(
        bank.scores, s_pos, pool, held_in, metrics["link"][first]["tau0_hat"], cfg)
    metrics["bank"] = {"anchors": int(len(bank.scores)), "candidates": int(bank.scores.shape[1]),
                       "batches": cfg.bank.batches, "positive_score_mean": float(s_pos.mean()),
                       "negative_score_mean": float(bank.scores[:, 1:].mean())}
    return metrics, plots


def _trend(rows: list[dict[str, Any]], x: str, name: str) -> dict[str, float | None]:
    """Spearman correlation of λ̂ and Δ̄ with the ablation's axis (the sign is the paper's claim),
    over the points where the estimate exists: λ̂ is undefined when the softmax fit ends at
    τ → ∞, i.e. the positive is no more likely than the mined negatives (digits has ten classes,
    so large pools hold many same-class near-duplicates). ``*_points`` counts the points used."""
    from scipy.stats import spearmanr  # heavy import, only where used

    out: dict[str, float | None] = {}
    for key, short in (("lambda_hat", "lambda"), ("delta_mean", "delta")):
        pairs = [(r[x], r[key]) for r in rows if r[key] is not None and np.isfinite(r[key])]
        ys = [y for _, y in pairs]
        defined = len(pairs) > 2 and np.ptp(ys) > 0  # else there is no ordering to test
        out[f"{name}_{short}_spearman"] = (
            float(spearmanr([p[0] for p in pairs], ys).statistic) if defined else None)
        out[f"{name}_{short}_points"] = len(pairs)
    return out


def pot_diagnostics(scores: np.ndarray, cfg: TailsConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """SPECS B.8: threshold, profile-likelihood GPD fit, endpoint, bootstrap CI, scipy agreement,
    stability over thresholds, QQ data and the exceedance density against the ξ = 0 fit."""
    from scipy import stats  # heavy import, only where used

    pot = cfg.pot
    u, y = exceedances(scores, pot.q)
    fit = fit_gpd(y)
    lo, hi = bootstrap_xi(y, replicates=pot.bootstrap, seed=cfg.seed) if pot.bootstrap else (None, None)
    c, _, scale = stats.genpareto.fit(y, floc=0)
    ll_scipy = float(stats.genpareto.logpdf(y, c, loc=0, scale=scale).sum())
    stability = xi_stability(scores, tuple(pot.stability_qs), pot.min_exceedances)
    xis = [r["xi"] for r in stability]
    metrics = {
        "q": pot.q, "u": u, "n_scores": int(scores.size), "n_exceedances": int(y.size),
        "xi": fit["xi"], "sigma": fit["sigma"], "xi_ci_low": lo, "xi_ci_high": hi,
        "endpoint": endpoint(u, fit["xi"], fit["sigma"]), "max_score": float(scores.max()),
        # scipy's generic optimiser: it agrees when it converged (never beats the profile MLE)
        "scipy_xi": float(c), "scipy_loglik_gap": fit["loglik"] - ll_scipy,
        "scipy_agrees": bool(abs(c - fit["xi"]) <= 0.02),
        "xi_stability_min": min(xis) if xis else None, "xi_stability_max": max(xis) if xis else None,
    }
    edges = np.linspace(0.0, float(y.max()), pot.density_bins + 1)
    density, _ = np.histogram(y, bins=edges, density=True)
    mid = 0.5 * (edges[1:] + edges[:-1])
    plots = {
        "u": u,
        "qq": qq_points(y, fit["xi"], fit["sigma"]),
        "density": {"x": mid.tolist(), "empirical": density.tolist(),
                    "gpd": stats.genpareto.pdf(mid, fit["xi"], scale=fit["sigma"]).tolist(),
                    # the ξ = 0 (Gumbel-domain) fit: exponential with its own MLE scale
                    "exponential": stats.expon.pdf(mid, scale=float(y.mean())).tolist()},
        "stability": [{"q": r["q"], "xi": r["xi"], "n": r["n"]} for r in stability],
    }
    return metrics, plots


def allocation_diagnostics(scores: np.ndarray, s_pos: np.ndarray, pool: np.ndarray,
                           held_in: np.ndarray, tau: float, cfg: TailsConfig,
                           ) -> tuple[dict[str, Any], dict[str, Any]]:
    """SPECS B.9 with the fitted links' own parameters: the softmax at τ̂0 and the pure Weibit
    link at its maximum-likelihood β̂ (both fitted on the held-in anchors)."""
    al = cfg.allocation
    beta = fit_link(scores[held_in], model="weibit").beta
    rng = np.random.default_rng(cfg.seed)
    rows = rng.choice(len(s_pos), size=al.anchors, replace=False)
    bins = np.linspace(-1.0, 1.0, al.bins + 1)
    res = gradient_allocation(s_pos[rows], pool[rows, :al.pool], k=al.k, subsets=al.subsets,
                              bins=bins, tau=tau, beta=beta, seed=cfg.seed)
    mid = 0.5 * (bins[1:] + bins[:-1])
    risk, sm, wb = (np.asarray(res[k]) for k in ("risk", "softmax_grad", "weibit_grad"))
    metrics = {
        "tau": tau, "beta": beta, "failure_rate": res["failure_rate"],
        "risk_mean_score": float(mid @ risk) if risk.sum() > 0 else None,
        "softmax_mean_score": float(mid @ sm), "weibit_mean_score": float(mid @ wb),
        # total variation from the risk curve: the Weibit gradient should sit closer to it
        "softmax_tv_to_risk": float(0.5 * np.abs(sm - risk).sum()) if risk.sum() > 0 else None,
        "weibit_tv_to_risk": float(0.5 * np.abs(wb - risk).sum()) if risk.sum() > 0 else None,
    }
    return metrics, res
