"""The diagnose stage for one image dataset: the tail diagnostics (the WEINCE paper's §3–4:
peaks over threshold, the softmax-vs-Weibull link test, its ablations, gradient allocation, and
the repulsion share of Wang & Isola §5) of every run, at every kept checkpoint and at the final
weights. Per run, ``tails_metrics_dir(dataset)/<run>.json`` holds the scalars per epoch and
``tails_plots_dir(dataset)/<run>.json`` the data behind the report's figures.

One process for the dataset: on digits a run's diagnostics take ≈ 15 s against ≈ 7 s of process
start and DVC bookkeeping per stage (reports/timings/), so a stage per run spent a third of its
wall time on fixed cost. Outputs are replaced as whole folders once every run is done.

The banks' embeddings come from the evaluate stage's extraction (``pipeline/extract.py``), so no
encoder is run here. A checkpoint before the final one gets what the over-training figure and the
stability row read (POT, the link test without its parametric-bootstrap LRT, allocation,
repulsion); the ablations and the LRT are final-epoch quantities: every claim on them decides at
the final epoch, and they are the costly part of a diagnosis. ``diagnose_banks`` runs
everything for one checkpoint's banks and returns ``metrics`` (scalars with stable names, for ``dvc metrics diff`` and the summary over seeds) and
``plots`` (the arrays behind the figures). Every interval respects the dependence in the banks:
POT exceedances and allocation anchors are resampled by image (pairs and views of one image share
it), link-test quantities are clustered by batch (anchors of a batch share its draw and its
candidates).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from infonce_lab.io import replaced_together
from infonce_lab.params import Params, TailsConfig
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.extract import load_banks
from infonce_lab.pipeline.study import dataset_runs
from infonce_lab.tails.ablations import (
    ablation_trend,
    frechet_ablation,
    hardness_ablation,
    pool_size_ablation,
)
from infonce_lab.tails.allocation import gradient_allocation, tv_to_risk
from infonce_lab.tails.banks import (
    LinkBank,
    PotScores,
    link_bank_from,
    pool_order,
    pool_scores,
    pot_pairs_from,
)
from infonce_lab.tails.link import fit_link, link_test, split_batches
from infonce_lab.tails.pot import (
    cluster_bootstrap,
    cluster_weights,
    endpoint,
    exceedances,
    exponential_lrt,
    fit_gpd,
    iid_xi_se,
    qq_points,
    xi_design_effect,
    xi_stability,
)
from infonce_lab.tails.repulsion import repulsion_shares
from infonce_lab.train.progress import duration


def diagnose_dataset(params: Params, dataset: str) -> None:
    dataset_runs(params, dataset)  # a dataset outside the study is an error
    runs = [r for r in params.diagnosed_runs() if r.dataset == dataset]
    cfg = params.tails
    torch.set_num_threads(params.training.threads)
    epochs = [*params.training.checkpoint_epochs, params.training.epochs]
    banks = {r.id: load_banks(paths.features_dir(dataset) / r.id, epochs)   # before any work
             for r in runs}
    first = cfg.link.placements[0]
    results: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    todo, done, t0 = sum(len(b) for b in banks.values()), 0, time.monotonic()
    for run in runs:
        metrics: dict[str, Any] = {}
        plots: dict[str, Any] = {}
        final = banks[run.id][-1][0]
        for epoch, arrays in banks[run.id]:
            key = f"epoch_{epoch}"
            metrics[key], plots[key] = diagnose_banks(
                link_bank_from(arrays["link_z"], arrays["link_images"]),
                pot_pairs_from(arrays["pot_z"], arrays["pot_images"]), cfg,
                final=epoch == final)
            m, done = metrics[key], done + 1
            left = (time.monotonic() - t0) / done * (todo - done)
            print(f"[{done}/{todo}, ETA {duration(left)}] {run.id} {key}: xi {m['pot']['xi']:+.3f}, lambda({first}) "
                  f"{m['link'][first]['lambda_hat']:.3f}, delta "
                  f"{m['link'][first]['delta_mean']:+.4f}")
        metrics["final_epoch"] = final
        results[run.id] = (metrics, plots)
    with replaced_together() as outputs:
        outputs.json_dir(paths.tails_plots_dir(dataset), {k: v[1] for k, v in results.items()})
        outputs.json_dir(paths.tails_metrics_dir(dataset), {k: v[0] for k, v in results.items()})


def diagnose_banks(bank: LinkBank, pairs: PotScores, cfg: TailsConfig, final: bool = True,
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every diagnostic of one checkpoint's banks; ``final=False`` (an earlier checkpoint) leaves
    out the ablations and the link test's parametric-bootstrap LRT."""
    metrics: dict[str, Any] = {}
    plots: dict[str, Any] = {}
    metrics["pot"], plots["pot"] = pot_diagnostics(pairs, cfg)

    link = cfg.link
    metrics["link"] = {}
    for i, placement in enumerate(link.placements):
        lrt = link.lrt_replicates if final and (i == 0 or link.lrt_every_placement) else 0
        res = link_test(bank.scores, bank.batch, placement=placement,
                        held_in_fraction=link.held_in_fraction, bootstrap=link.bootstrap,
                        lrt_replicates=lrt, cv_folds=link.cv_folds, seed=cfg.seed,
                        optimizer=link.optimizer)
        res["delta_ci_low"], res["delta_ci_high"] = res.pop("delta_ci")
        res.pop("placement")
        metrics["link"][placement] = res

    held_in = split_batches(bank.batch, link.held_in_fraction, cfg.seed)  # as link_test splits
    out_batches = bank.batch[~held_in]
    first = link.placements[0]
    ab = cfg.ablations
    pool_size = max([*ab.pool_sizes, cfg.allocation.pool])
    s_pos, pool = pool_scores(bank, pool_order(bank.image, pool_size, cfg.seed))
    if final:
        if ab.frechet:
            metrics["frechet"] = frechet_ablation(bank.scores, held_in, first, bank.batch)
        plots["hardness"], d_hard, i_hard = hardness_ablation(
            bank.scores, held_in, ab.hardness_ks, first, return_deltas=True,
            batch_ids=bank.batch)
        plots["pool_size"], d_pool, i_pool = pool_size_ablation(
            s_pos, pool, held_in, ab.pool_sizes, ab.pool_hard_k, first, return_deltas=True,
            batch_ids=bank.batch)
        plots["ablation_placement"] = first
        metrics["ablations"] = {
            **ablation_trend(plots["hardness"], d_hard, "hardness", out_batches, i_hard),
            **ablation_trend(plots["pool_size"], d_pool, "pool", out_batches, i_pool)}

    tau0 = metrics["link"][first]["tau0_hat"]
    if tau0 is None:  # H0's fitted 1/τ ≤ 0: the encoder does not rank positives above negatives
        metrics["allocation"], plots["allocation"] = dict.fromkeys(ALLOCATION_KEYS), None
        metrics["allocation"]["undefined"] = ("the softmax link's τ̂ is undefined (fitted 1/τ ≤ "
                                              "0: positives score no higher than negatives)")
    else:
        metrics["allocation"], plots["allocation"] = allocation_diagnostics(
            bank.scores, s_pos, pool, held_in, tau0, bank.image, cfg)
    rep = cfg.repulsion
    metrics["repulsion"] = repulsion_shares(bank.scores, bank.batch, list(rep.taus),
                                            rep.hard_fraction)
    metrics["bank"] = {"anchors": int(len(bank.scores)), "candidates": int(bank.scores.shape[1]),
                       "batches": cfg.bank.batches, "positive_score_mean": float(s_pos.mean()),
                       "negative_score_mean": float(bank.scores[:, 1:].mean())}
    return metrics, plots


def pot_diagnostics(pairs: PotScores | np.ndarray, cfg: TailsConfig,
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """WEINCE §2.3.1 (Fig. 3): threshold, profile-likelihood GPD fit, endpoint, the image-cluster
    bootstrap intervals of ξ̂ and of the endpoint, the likelihood-ratio test of the GPD against its
    ξ = 0 (exponential) member with AICs (:func:`~infonce_lab.tails.pot.exponential_lrt`; its
    χ²₁ reference adjusted by the clustering design effect of ξ̂, the cluster bootstrap's
    variance against an independent bootstrap's), scipy agreement, stability over thresholds, QQ
    data and the exceedance density against the ξ = 0 fit. A bare score array (no image ids) gets
    no bootstrap, and so no design effect (the adjusted LR is None)."""
    from scipy import stats  # heavy import, only where used

    pot = cfg.pot
    scores = pairs.scores if isinstance(pairs, PotScores) else np.asarray(pairs)
    u, y = exceedances(scores, pot.q)
    fit = fit_gpd(y)
    boot: dict[str, Any] = {"xi_ci_low": None, "xi_ci_high": None, "xi_se": None,
                            "endpoint_se": None, "endpoint_ci_low": None, "endpoint_ci_high": None,
                            "endpoint_unbounded": None, "replicates": 0, "clusters": None,
                            "edge_refits": 0}
    if pot.bootstrap and isinstance(pairs, PotScores):
        above = scores > u
        boot = cluster_bootstrap(y, u, pairs.image_a[above], pairs.image_b[above],
                                 replicates=pot.bootstrap, seed=cfg.seed)
    deff = None
    if boot["xi_se"] is not None and boot["replicates"] >= 2 and np.isfinite(boot["xi_se"]):
        iid_se = iid_xi_se(y, pot.bootstrap, cfg.seed + 1)
        deff = xi_design_effect(boot["xi_se"], iid_se) if iid_se > 0 else None
    vs_exp = exponential_lrt(y, fit, deff)
    c, _, scale = stats.genpareto.fit(y, floc=0)
    ll_scipy = float(stats.genpareto.logpdf(y, c, loc=0, scale=scale).sum())
    stability = xi_stability(scores, tuple(pot.stability_qs), pot.min_exceedances)
    xis = [r["xi"] for r in stability]
    x_f = endpoint(u, fit["xi"], fit["sigma"])
    metrics = {
        "q": pot.q, "u": u, "n_scores": int(scores.size), "n_exceedances": int(y.size),
        "xi": fit["xi"], "sigma": fit["sigma"], "xi_ci_low": boot["xi_ci_low"],
        "xi_ci_high": boot["xi_ci_high"], "xi_se": boot["xi_se"],
        "endpoint": x_f, "endpoint_se": boot["endpoint_se"],
        "endpoint_ci_low": boot["endpoint_ci_low"],
        "endpoint_ci_high": boot["endpoint_ci_high"],
        "endpoint_unbounded_share": boot["endpoint_unbounded"],
        # above the cosine cap: the fitted tail puts mass where no cosine can be
        "endpoint_above_cap": None if x_f is None else bool(x_f > 1.0),
        "max_score": float(scores.max()),
        "bootstrap_replicates": boot["replicates"], "bootstrap_clusters": boot["clusters"],
        "bootstrap_edge_refits": boot["edge_refits"],
        # scipy's generic optimiser: it agrees when it converged (never beats the profile MLE)
        "scipy_xi": float(c), "scipy_loglik_gap": fit["loglik"] - ll_scipy,
        "scipy_agrees": bool(abs(c - fit["xi"]) <= 0.02),
        "xi_stability_min": min(xis) if xis else None, "xi_stability_max": max(xis) if xis else None,
        # the GPD against ξ = 0 (§2.3.1, Fig. 3): LR, χ²₁ p, design effect, adjusted LR, AICs
        **vs_exp,
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


# allocation_diagnostics' metrics, every one of them None where its τ̂ is undefined
ALLOCATION_KEYS = ("tau", "beta", "failure_rate", "risk_mean_score", "softmax_mean_score",
                   "weibit_mean_score", "softmax_tv_to_risk", "weibit_tv_to_risk", "tv_gap",
                   "tv_gap_ci_low", "tv_gap_ci_high", "tv_gap_se", "bootstrap_replicates")


def allocation_diagnostics(scores: np.ndarray, s_pos: np.ndarray, pool: np.ndarray,
                           held_in: np.ndarray, tau: float, image: np.ndarray, cfg: TailsConfig,
                           ) -> tuple[dict[str, Any], dict[str, Any]]:
    """WEINCE App. C.2 (Fig. 6) with the fitted links' own parameters: the softmax at τ̂0 and the
    pure Weibit link at its maximum-likelihood β̂ (both fitted on the held-in anchors). The gap
    TV(softmax) − TV(Weibit) gets a percentile interval from resampling images (an anchor's
    subsets share its image; two views of one image share it too)."""
    al = cfg.allocation
    beta = fit_link(scores[held_in], model="weibit").beta
    rng = np.random.default_rng(cfg.seed)
    rows = rng.choice(len(s_pos), size=al.anchors, replace=False)
    bins = np.linspace(-1.0, 1.0, al.bins + 1)
    res = gradient_allocation(s_pos[rows], pool[rows, :al.pool], k=al.k, subsets=al.subsets,
                              bins=bins, tau=tau, beta=beta, seed=cfg.seed, per_anchor=True)
    per = res.pop("per_anchor")
    mid = 0.5 * (bins[1:] + bins[:-1])
    risk, sm, wb = (np.asarray(res[k]) for k in ("risk", "softmax_grad", "weibit_grad"))
    has_risk = bool(risk.sum() > 0)
    metrics: dict[str, Any] = {
        "tau": tau, "beta": beta, "failure_rate": res["failure_rate"],
        "risk_mean_score": float(mid @ risk) if has_risk else None,
        "softmax_mean_score": float(mid @ sm), "weibit_mean_score": float(mid @ wb),
        # total variation from the risk curve: the Weibit gradient should sit closer to it
        "softmax_tv_to_risk": float(0.5 * np.abs(sm - risk).sum()) if has_risk else None,
        "weibit_tv_to_risk": float(0.5 * np.abs(wb - risk).sum()) if has_risk else None,
        "tv_gap": None, "tv_gap_ci_low": None, "tv_gap_ci_high": None, "tv_gap_se": None,
        "bootstrap_replicates": 0,
    }
    if has_risk:
        metrics["tv_gap"] = metrics["softmax_tv_to_risk"] - metrics["weibit_tv_to_risk"]
        if al.bootstrap:
            w = cluster_weights(image[rows], None, al.bootstrap, cfg.seed)
            risk_b = w @ per["risk"]
            keep = risk_b.sum(axis=1) > 0
            gap = (tv_to_risk(risk_b[keep], w[keep] @ per["softmax_grad"])
                   - tv_to_risk(risk_b[keep], w[keep] @ per["weibit_grad"]))
            metrics.update({"tv_gap_ci_low": float(np.quantile(gap, 0.025)),
                            "tv_gap_ci_high": float(np.quantile(gap, 0.975)),
                            "tv_gap_se": float(np.std(gap, ddof=1)),
                            "bootstrap_replicates": int(keep.sum())})
    return metrics, res
