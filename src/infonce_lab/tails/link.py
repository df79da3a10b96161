"""The softmax-vs-Weibull link-selection test (SPECS B.2–B.5).

Each anchor i has a row of candidate scores s_i (cosines) and an observed winner w_i (in training
banks, the positive). H0 is the softmax link, p0(k) ∝ exp(s_ik/τ); H1 blends in the Weibull
shortfall coordinate g(s) = −log(1 − s) with weight λ. Where 1/τ applies in H1 is not known from
the paper (SPECS B.2), so both placements are implemented:

- ``"inside"``:  logit = [(1 − λ)·s + λ·g(s)] / τ   (the nested transform T_λ, then the softmax)
- ``"outside"``: logit = (1 − λ)·s/τ + λ·g(s)        (as in the WEINCE training loss)

Parameters are fitted by maximum likelihood (L-BFGS in float64, unconstrained log τ and logit λ,
several starts) on held-in batches; the evidence is the held-out mean log-likelihood gain per
anchor Δ̄ (nats), with a batch-clustered t-test, a batch bootstrap interval, a parametric-bootstrap
likelihood-ratio test (λ = 0 is on the boundary, so χ² calibration is unreliable) and K-fold
cross-validation over batches. Everything is vectorised over anchors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

EPS = 1e-6
Placement = str  # "inside" | "outside"


def shortfall(s: torch.Tensor) -> torch.Tensor:
    return -torch.log1p(-s.clamp(max=1.0 - EPS))


def log_likelihoods(
    s: torch.Tensor, g: torch.Tensor, winners: torch.Tensor, log_tau: torch.Tensor,
    logit_lam: torch.Tensor | None, placement: Placement = "inside",
) -> torch.Tensor:
    """Per-anchor log-probability of the observed winner; ``logit_lam=None`` is H0."""
    inv_tau = torch.exp(-log_tau)
    if logit_lam is None:
        logits = s * inv_tau
    else:
        lam = torch.sigmoid(logit_lam)
        if placement == "inside":
            logits = ((1 - lam) * s + lam * g) * inv_tau
        elif placement == "outside":
            logits = (1 - lam) * s * inv_tau + lam * g
        else:
            raise ValueError(f"unknown placement {placement!r}: expected 'inside' or 'outside'")
    return logits.gather(1, winners.unsqueeze(1)).squeeze(1) - torch.logsumexp(logits, dim=1)


@dataclass(frozen=True)
class LinkFit:
    tau: float
    lam: float | None  # None for H0
    loglik: float  # summed over the anchors it was fitted on

    def params(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        log_tau = torch.tensor(math.log(self.tau), dtype=torch.float64)
        if self.lam is None:
            return log_tau, None
        lam = min(max(self.lam, 1e-12), 1 - 1e-12)
        return log_tau, torch.tensor(math.log(lam / (1 - lam)), dtype=torch.float64)


def _fit_from(s: torch.Tensor, g: torch.Tensor, winners: torch.Tensor, tau0: float,
              lam0: float | None, placement: Placement) -> LinkFit | None:
    """One L-BFGS run from (τ0, λ0); ``lam0=None`` fits H0."""
    log_tau = torch.tensor(math.log(tau0), dtype=torch.float64, requires_grad=True)
    params = [log_tau]
    logit_lam = None
    if lam0 is not None:
        logit_lam = torch.tensor(math.log(lam0 / (1 - lam0)), dtype=torch.float64,
                                 requires_grad=True)
        params.append(logit_lam)
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=100, tolerance_grad=1e-9,
                            tolerance_change=1e-12, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        nll = -log_likelihoods(s, g, winners, log_tau, logit_lam, placement).sum()
        nll.backward()
        return nll

    opt.step(closure)
    with torch.no_grad():
        ll = float(log_likelihoods(s, g, winners, log_tau, logit_lam, placement).sum())
    if not math.isfinite(ll):
        return None
    return LinkFit(tau=float(torch.exp(log_tau.detach())), loglik=ll,
                   lam=None if logit_lam is None else float(torch.sigmoid(logit_lam.detach())))


def fit_link(
    s: torch.Tensor, g: torch.Tensor, winners: torch.Tensor, h1: bool,
    placement: Placement = "inside", taus: tuple[float, ...] = (0.05, 0.2, 1.0),
    lams: tuple[float, ...] = (0.1, 0.5, 0.9),
) -> LinkFit:
    """Maximum likelihood of H0 (τ) or H1 (τ, λ) by L-BFGS from several starts."""
    fits = [_fit_from(s, g, winners, t, lam, placement)
            for t in taus for lam in (lams if h1 else (None,))]
    fits = [f for f in fits if f is not None]
    if not fits:
        raise FloatingPointError("the link likelihood was not finite from any start")
    return max(fits, key=lambda f: f.loglik)


def per_anchor_gain(s, g, winners, fit0: LinkFit, fit1: LinkFit, placement) -> torch.Tensor:  # noqa: ANN001
    """Δ_i = log p1(w_i) − log p0(w_i) at the fitted parameters."""
    with torch.no_grad():
        return (log_likelihoods(s, g, winners, *fit1.params(), placement)
                - log_likelihoods(s, g, winners, *fit0.params(), placement))


def _batch_means(delta: np.ndarray, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ids, inv, counts = np.unique(batch, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=delta, minlength=len(ids))
    return sums, counts


def link_test(
    scores: np.ndarray,
    batch_ids: np.ndarray,
    winners: np.ndarray | None = None,
    placement: Placement = "inside",
    held_in_fraction: float = 0.5,
    bootstrap: int = 2000,
    lrt_replicates: int = 99,
    cv_folds: int = 5,
    seed: int = 0,
) -> dict[str, float | list[float] | str | None]:
    """H0 vs H1 on a bank of anchors.

    ``scores`` is (anchors, candidates); the observed winner of row i is column ``winners[i]``
    (default: column 0, where the score banks put the positive). ``batch_ids`` groups anchors
    into batches: the held-in/held-out split, the clustered test and the bootstraps resample
    whole batches, which keeps within-batch dependence.
    """
    s_np = np.asarray(scores, dtype=np.float64)
    batch = np.asarray(batch_ids)
    if s_np.ndim != 2 or s_np.shape[0] != batch.shape[0]:
        raise ValueError(f"scores must be (anchors, candidates) with one batch id per anchor; got "
                         f"{s_np.shape} and {batch.shape}")
    w_np = np.zeros(len(s_np), dtype=np.int64) if winners is None else np.asarray(winners, np.int64)
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.unique(batch))
    if len(ids) < 4:
        raise ValueError(f"need at least 4 batches for held-in/held-out and clustering, got {len(ids)}")
    n_in = max(1, min(len(ids) - 2, int(round(held_in_fraction * len(ids)))))
    held_in = np.isin(batch, ids[:n_in])
    s, g = torch.as_tensor(s_np), shortfall(torch.as_tensor(s_np))
    w = torch.as_tensor(w_np)
    tr, te = torch.as_tensor(held_in), torch.as_tensor(~held_in)

    fit0 = fit_link(s[tr], g[tr], w[tr], h1=False, placement=placement)
    fit1 = fit_link(s[tr], g[tr], w[tr], h1=True, placement=placement)
    delta = per_anchor_gain(s[te], g[te], w[te], fit0, fit1, placement).numpy()
    sums, counts = _batch_means(delta, batch[~held_in])
    per_batch = sums / counts

    from scipy import stats  # heavy import, only where used

    t_res = stats.ttest_1samp(per_batch, 0.0, alternative="greater")
    boot_idx = rng.integers(0, len(per_batch), size=(bootstrap, len(per_batch)))
    boot = sums[boot_idx].sum(1) / counts[boot_idx].sum(1)
    ci = [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))]

    lr_obs = 2.0 * (fit1.loglik - fit0.loglik)
    lrt_p = None
    if lrt_replicates > 0:
        with torch.no_grad():
            probs = torch.softmax(s[tr] / fit0.tau, dim=1)
        gen = torch.Generator().manual_seed(seed)
        exceed = 0
        for _ in range(lrt_replicates):
            w_sim = torch.multinomial(probs, 1, generator=gen).squeeze(1)
            f0 = fit_link(s[tr], g[tr], w_sim, h1=False, placement=placement, taus=(fit0.tau,))
            f1 = fit_link(s[tr], g[tr], w_sim, h1=True, placement=placement,
                          taus=(fit0.tau,), lams=(0.05, 0.5))
            exceed += 2.0 * (f1.loglik - f0.loglik) >= lr_obs
        lrt_p = (1 + exceed) / (1 + lrt_replicates)

    cv = []
    if cv_folds > 1:
        folds = np.array_split(rng.permutation(np.unique(batch)), cv_folds)
        for fold in folds:
            test_mask = torch.as_tensor(np.isin(batch, fold))
            f0 = fit_link(s[~test_mask], g[~test_mask], w[~test_mask], h1=False, placement=placement)
            f1 = fit_link(s[~test_mask], g[~test_mask], w[~test_mask], h1=True, placement=placement)
            cv.append(float(per_anchor_gain(s[test_mask], g[test_mask], w[test_mask], f0, f1,
                                            placement).mean()))

    return {
        "placement": placement,
        "lambda_hat": fit1.lam,
        "tau0_hat": fit0.tau,
        "tau1_hat": fit1.tau,
        "delta_mean": float(delta.mean()),
        "delta_ci": ci,
        "exp_delta_mean": float(np.exp(delta.mean())),
        "t_pvalue": float(t_res.pvalue),
        "lr_statistic": lr_obs,
        "lrt_pvalue": lrt_p,
        "cv_delta_mean": float(np.mean(cv)) if cv else None,
        "cv_delta_std": float(np.std(cv)) if cv else None,
        "n_heldin_anchors": int(held_in.sum()),
        "n_heldout_anchors": int((~held_in).sum()),
        "n_batches": int(len(ids)),
    }
