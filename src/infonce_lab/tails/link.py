"""The softmax-vs-Weibull link-selection test (WEINCE §2.3.2, App. D.3–D.6).

Each anchor i has a row of candidate scores s_i (cosines) and an observed winner w_i (in the score
banks, the positive, at column 0). H0 is the softmax link, p0(k) ∝ exp(s_ik/τ); H1 blends in the
Weibull shortfall coordinate g(s) = −log(1 − s) with weight λ. Where 1/τ applies in H1 is not
known from the paper (§2.3.2 leaves it open), so both placements are implemented:

- ``"inside"``:  logit = [(1 − λ)·s + λ·g(s)] / τ   (the nested transform T_λ, then the softmax)
- ``"outside"``: logit = (1 − λ)·s/τ + λ·g(s)        (as in the WEINCE training loss)

Every link here is a softmax of a linear combination of score features, logit = Σ_j w_j·f_j(s),
with non-negative natural weights (inside: w = ((1 − λ)/τ, λ/τ); outside: w = ((1 − λ)/τ, λ)).
In w the log-likelihood ℓ(w) = w·T − Σ_i logsumexp_k(w·f_ik) is concave (an exponential family
whose sufficient statistic T = Σ_i f_{i,w_i} is all that depends on the winners), so the box-
constrained maximisation reaches the global maximum (projected Newton with the exact 2×2 or 3×3
Hessian by default; scipy's L-BFGS-B, our proposal (App. D.3 names none), as an option), and the
several starts we propose must agree — ``start_spread`` reports how closely they do.
This parameterisation is why the parametric-bootstrap LRT and the cross-validation can each start
from the full fit and run once. The Fréchet link of the ablation (App. D.6) adds the feature
log(1 + s), our proposal for ρ(s) on cosine scores (the paper does not give it).

The evidence is the held-out mean log-likelihood gain per anchor Δ̄ (nats) with a batch-clustered
t-test, a batch bootstrap interval, a parametric-bootstrap likelihood-ratio test (λ = 0 is on the
boundary, so χ² calibration is unreliable) and K-fold cross-validation over batches. λ̂ gets a
cluster-robust (sandwich) se over the held-in batches by the delta method, except on a bound of
its fit, where the MLE is not asymptotically normal and the result says so (``lambda_boundary``);
a held-out gain from two fits that coincide (λ̂ = 0, or τ̂0 on its bound) is flagged
``delta_degenerate``: Δ̄ = 0 there by construction, not by measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

EPS = 1e-6
PLACEMENTS = ("inside", "outside")
# Each link: its score features; the first is the linear score whenever the link has one.
MODELS: dict[str, tuple[str, ...]] = {
    "softmax": ("s",),
    "weibull": ("s", "g"),  # H1
    "frechet": ("s", "h"),
    "weibull_frechet": ("s", "g", "h"),
    "weibit": ("g",),  # the pure Weibull-type link, p ∝ (1 − s)^(−β)
}


def features(scores: np.ndarray, names: tuple[str, ...], eps: float = EPS) -> np.ndarray:
    """(features, anchors, candidates): s, g(s) = −log(1 − s) and h(s) = log(1 + s), clamped to
    stay finite at s = ±1 (s ≤ 1 − 1e-6 inside g, the loss's clamp)."""
    s = np.asarray(scores, dtype=np.float64)
    make = {"s": lambda: s,
            "g": lambda: -np.log1p(-np.minimum(s, 1.0 - eps)),
            "h": lambda: np.log1p(np.maximum(s, -1.0 + eps))}
    return np.stack([make[n]() for n in names])


@dataclass(frozen=True)
class LinkFit:
    model: str
    placement: str
    weights: np.ndarray  # natural weights, one per feature of the model
    loglik: float  # summed over the anchors it was fitted on
    start_spread: float  # max − min log-likelihood over the starts (≈ 0: concave problem)

    @property
    def tau(self) -> float | None:
        """The link's temperature; None for the pure Weibit link (its weight is β) or when the
        linear part vanished (λ = 1 outside)."""
        names, w = MODELS[self.model], self.weights
        if names[0] != "s":
            return None
        if self.placement == "inside":
            return float(1.0 / w.sum()) if w.sum() > 0 else None
        rest = 1.0 - float(w[1:].sum())
        return float(rest / w[0]) if w[0] > 0 and rest > 0 else None

    @property
    def lambdas(self) -> dict[str, float]:
        """The blend weight of each non-linear feature (g: Weibull, h: Fréchet)."""
        names, w = MODELS[self.model], self.weights
        if names[0] != "s":
            return {}
        if self.placement == "inside":
            share = w[1:] / w.sum() if w.sum() > 0 else np.full(len(w) - 1, np.nan)
        else:
            share = w[1:]
        return {n: float(v) for n, v in zip(names[1:], share, strict=True)}

    @property
    def beta(self) -> float | None:
        return float(self.weights[0]) if self.model == "weibit" else None


def _natural(model: str, placement: str, tau: float, lams: tuple[float, ...]) -> np.ndarray:
    if model == "weibit":
        return np.array([1.0 / tau])
    lam = np.asarray(lams, dtype=np.float64)
    w_s = (1.0 - lam.sum()) / tau
    return np.r_[w_s, lam / tau if placement == "inside" else lam]


W_MAX = 1e4  # τ ≥ 1e-4: when the winners are separable (the positive always scores highest)
# the likelihood grows without bound as τ → 0; the fit then stops at this cap.


def _bounds(model: str, placement: str) -> tuple[np.ndarray, np.ndarray]:
    names = MODELS[model]
    hi = np.full(len(names), W_MAX)
    if placement == "outside" and names[0] == "s":
        hi[1:] = 1.0  # λ itself
    return np.zeros(len(names)), hi


def _default_starts(model: str, placement: str) -> list[np.ndarray]:
    extra = len(MODELS[model]) - 1 if MODELS[model][0] == "s" else 0
    if extra == 0:
        return [_natural(model, placement, tau, ()) for tau in (0.05, 1.0)]
    return [_natural(model, placement, tau, tuple([lam / extra] * extra))
            for tau, lam in ((0.05, 0.1), (0.2, 0.5), (1.0, 0.9))]


def _loglik(w: np.ndarray, f: torch.Tensor, t: torch.Tensor, order: int = 1,
            ) -> tuple[float, np.ndarray | None, np.ndarray | None]:
    """ℓ(w) and, up to ``order``, its gradient T − Σ_i E_p[f_i] and Hessian −Σ_i Cov_p(f_i).
    In torch (float64): its kernels use both cores, faster than numpy on these passes. One exp
    per pass serves both the log-normaliser and the probabilities (torch.logsumexp would take a
    second; with the accepted Newton step below, the link test runs faster to the same maximum:
    ``tails.link_lbfgs_over_newton`` in reports/bench.json)."""
    wt = torch.from_numpy(w)
    logits = torch.tensordot(wt, f, dims=1)
    top = logits.amax(dim=1, keepdim=True)
    e = torch.exp(logits - top)
    z = e.sum(dim=1)
    ll = float(wt @ t - (top.squeeze(1) + torch.log(z)).sum())
    if order == 0:
        return ll, None, None
    fp = f * (e / z[:, None])  # f weighted by the link's probabilities
    mean = fp.sum(dim=2)  # E_p[f_i] per anchor
    grad = (t - mean.sum(dim=1)).numpy()
    if order == 1:
        return ll, grad, None
    second = torch.tensordot(fp, f, dims=([1, 2], [1, 2]))  # Σ_i E_p[f_i f_iᵀ]
    return ll, grad, -(second - mean @ mean.T).numpy()


def _newton(f: torch.Tensor, t: torch.Tensor, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray,
            max_iter: int = 100) -> tuple[np.ndarray, float]:
    """Maximise the concave ℓ over the box [lo, hi] by projected Newton steps with the exact
    Hessian and an Armijo backtracking line search; weights at a bound whose gradient points
    outwards are held there for the step."""
    x = np.clip(x0, lo, hi)
    ll, grad, hess = _loglik(x, f, t, order=2)
    for _ in range(max_iter):
        held = ((x <= lo) & (grad < 0)) | ((x >= hi) & (grad > 0))
        free = ~held
        if not free.any():
            break
        step = np.zeros_like(x)
        h = -hess[np.ix_(free, free)]
        # lstsq: the Hessian is singular when the links' probabilities collapse onto one candidate
        step[free] = np.linalg.lstsq(h, grad[free], rcond=None)[0]
        if grad[free] @ step[free] < 1e-10:  # Newton decrement: ℓ is within ~1e-10 nats of its max
            break
        # The full step is almost always taken: evaluate it to second order at once, so an
        # accepted step costs one data pass, not a line-search pass and then a Newton pass.
        x_new = np.clip(x + step, lo, hi)
        ll_new, grad_new, hess_new = _loglik(x_new, f, t, order=2)
        size = 1.0
        while not (ll_new >= ll + 1e-4 * grad @ (x_new - x) or size < 1e-10):
            size *= 0.5
            x_new = np.clip(x + size * step, lo, hi)
            ll_new = _loglik(x_new, f, t, order=0)[0]
            grad_new = None
        converged = ll_new - ll <= 1e-13 * max(1.0, abs(ll)) and np.abs(x_new - x).max() <= 1e-9 * (
            1.0 + np.abs(x).max())
        if ll_new < ll:  # no ascent left: at the maximum to round-off
            break
        x = x_new
        if grad_new is None:  # the line search shortened the step
            ll, grad, hess = _loglik(x, f, t, order=2)
        else:
            ll, grad, hess = ll_new, grad_new, hess_new
        if converged:
            break
    return x, ll


def _lbfgs(f: torch.Tensor, t: torch.Tensor, x0: np.ndarray, lo: np.ndarray,
           hi: np.ndarray) -> tuple[np.ndarray, float]:
    from scipy.optimize import minimize  # heavy import, only where used

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        ll, grad, _ = _loglik(w, f, t)
        return -ll, -grad

    res = minimize(objective, np.clip(x0, lo, hi), jac=True, method="L-BFGS-B",
                   bounds=list(zip(lo, hi, strict=True)),
                   options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-8})
    return res.x, -float(res.fun)


OPTIMIZERS = {"newton": _newton, "lbfgs": _lbfgs}


def _fit(f: torch.Tensor, t: torch.Tensor, model: str, placement: str, starts: list[np.ndarray],
         optimizer: str = "newton") -> LinkFit:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}: expected one of {sorted(OPTIMIZERS)}")
    lo, hi = _bounds(model, placement)
    results = [OPTIMIZERS[optimizer](f, t, np.asarray(x0, dtype=np.float64), lo, hi)
               for x0 in starts]
    results = [r for r in results if np.isfinite(r[1])]
    if not results:
        raise FloatingPointError(f"the {model} link likelihood was not finite from any start")
    x, ll = max(results, key=lambda r: r[1])
    values = [r[1] for r in results]
    return LinkFit(model=model, placement=placement, weights=x.copy(), loglik=ll,
                   start_spread=float(max(values) - min(values)))


def _stats(f: torch.Tensor, winners: np.ndarray) -> torch.Tensor:
    """The sufficient statistic T = Σ_i f_{i, w_i}."""
    return f[:, torch.arange(f.shape[1]), torch.from_numpy(winners)].sum(dim=1)


def _tensor(scores: np.ndarray, model: str) -> torch.Tensor:
    return torch.from_numpy(features(scores, MODELS[model]))


def fit_link(scores: np.ndarray, winners: np.ndarray | None = None, model: str = "weibull",
             placement: str = "inside", starts: list[np.ndarray] | None = None,
             optimizer: str = "newton") -> LinkFit:
    """Maximum-likelihood fit of one link on (anchors, candidates) scores from several starts
    (default (τ, λ) ∈ {(0.05, 0.1), (0.2, 0.5), (1, 0.9)}; τ ∈ {0.05, 1} for softmax).
    ``optimizer``: projected Newton with the exact Hessian (the default: 2–3 weights, a concave
    problem, ≈ 5 data passes) or scipy's L-BFGS-B (our proposal, App. D.3 names none; ≈ 25
    passes; the tests check both reach the same maximum)."""
    _check_link(model, placement)
    s, w = _choices(scores, winners)
    f = _tensor(s, model)
    return _fit(f, _stats(f, w), model, placement, starts or _default_starts(model, placement),
                optimizer)


def log_probs(scores: np.ndarray, winners: np.ndarray | None, fit: LinkFit) -> np.ndarray:
    """Per-anchor log-probability of the observed winner under a fitted link."""
    s, w = _choices(scores, winners)
    return _log_probs(_tensor(s, fit.model), w, fit.weights)


def _log_probs(f: torch.Tensor, winners: np.ndarray, w: np.ndarray) -> np.ndarray:
    logits = torch.tensordot(torch.from_numpy(w), f, dims=1)
    chosen = logits[torch.arange(len(winners)), torch.from_numpy(winners)]
    return (chosen - torch.logsumexp(logits, dim=1)).numpy()


def _choices(scores: np.ndarray, winners: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The scores as float64 and the winner of each row (default: column 0, the positive)."""
    s = np.asarray(scores, dtype=np.float64)
    w = np.zeros(len(s), dtype=np.int64) if winners is None else np.asarray(winners, np.int64)
    return s, w


def _check_link(model: str, placement: str) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown link model {model!r}: expected one of {sorted(MODELS)}")
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r}: expected one of {PLACEMENTS}")


def split_batches(batch_ids: np.ndarray, held_in_fraction: float, seed: int) -> np.ndarray:
    """Boolean held-in mask over anchors: a random ``held_in_fraction`` of the batches (at least
    one, leaving at least two held out for the clustered test)."""
    batch = np.asarray(batch_ids)
    ids = np.random.default_rng(seed).permutation(np.unique(batch))
    if len(ids) < 4:
        raise ValueError(f"need at least 4 batches for held-in/held-out and clustering, got {len(ids)}")
    n_in = max(1, min(len(ids) - 2, int(round(held_in_fraction * len(ids)))))
    return np.isin(batch, ids[:n_in])


def held_out_gain(scores: np.ndarray, held_in: np.ndarray, null: str, alt: str,
                  placement: str = "inside", winners: np.ndarray | None = None,
                  optimizer: str = "newton") -> tuple[LinkFit, LinkFit, np.ndarray]:
    """Fit ``null`` and ``alt`` on the held-in anchors; Δ_i = log p_alt − log p_null on the rest."""
    s, w = _choices(scores, winners)
    fit0 = fit_link(s[held_in], w[held_in], null, placement, optimizer=optimizer)
    fit1 = fit_link(s[held_in], w[held_in], alt, placement, optimizer=optimizer)
    out = ~held_in
    delta = log_probs(s[out], w[out], fit1) - log_probs(s[out], w[out], fit0)
    return fit0, fit1, delta


def link_test(
    scores: np.ndarray,
    batch_ids: np.ndarray,
    winners: np.ndarray | None = None,
    placement: str = "inside",
    held_in_fraction: float = 0.5,
    bootstrap: int = 2000,
    lrt_replicates: int = 99,
    cv_folds: int = 5,
    seed: int = 0,
    optimizer: str = "newton",
) -> dict[str, Any]:
    """H0 (softmax) vs H1 (the Weibull blend) on a bank of anchors.

    ``scores`` is (anchors, candidates); the observed winner of row i is column ``winners[i]``
    (default: column 0, where the score banks put the positive). ``batch_ids`` groups anchors
    into batches: the held-in/held-out split, the clustered test and the bootstraps resample
    whole batches, which keeps within-batch dependence.
    """
    _check_link("weibull", placement)
    s, w = _choices(scores, winners)
    batch = np.asarray(batch_ids)
    if s.ndim != 2 or s.shape[0] != batch.shape[0]:
        raise ValueError(f"scores must be (anchors, candidates) with one batch id per anchor; got "
                         f"{s.shape} and {batch.shape}")
    held_in = split_batches(batch, held_in_fraction, seed)
    rng = np.random.default_rng(seed)
    fit0, fit1, delta = held_out_gain(s, held_in, "softmax", "weibull", placement, w,
                                       optimizer)
    out_batches = batch[~held_in]
    ids, inv = np.unique(out_batches, return_inverse=True)
    sums = np.bincount(inv, weights=delta, minlength=len(ids))
    counts = np.bincount(inv, minlength=len(ids)).astype(np.float64)

    from scipy import stats  # heavy import, only where used

    batch_means = sums / counts
    t_res = stats.ttest_1samp(batch_means, 0.0, alternative="greater")
    # the t-inference behind that test, for the report's rules: Δ̄ over held-out batches (equal
    # batch sizes, so the mean of batch means is the anchors' mean), df = G − 1
    delta_se = float(np.std(batch_means, ddof=1) / np.sqrt(len(ids))) if len(ids) > 1 else None
    lam = lambda_cluster_se(s[held_in], w[held_in], fit1, batch[held_in])
    boot_idx = rng.integers(0, len(ids), size=(bootstrap, len(ids)))
    boot = sums[boot_idx].sum(1) / counts[boot_idx].sum(1)
    ci = [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))]

    lr_obs = 2.0 * (fit1.loglik - fit0.loglik)
    lrt_p = None
    if lrt_replicates > 0:
        lrt_p = _parametric_bootstrap_lrt(s[held_in], fit0, fit1, lr_obs, lrt_replicates, rng,
                                          optimizer)

    cv: list[float] = []
    if cv_folds > 1:
        f0_all, f1_all = _tensor(s, "softmax"), _tensor(s, "weibull")
        for fold in np.array_split(rng.permutation(np.unique(batch)), cv_folds):
            test_np = np.isin(batch, fold)
            test = torch.from_numpy(test_np)
            # Concave in the natural weights: one start at the full fit reaches the maximum.
            a = _fit(f0_all[:, ~test], _stats(f0_all[:, ~test], w[~test_np]), "softmax",
                     placement, [fit0.weights], optimizer)
            b = _fit(f1_all[:, ~test], _stats(f1_all[:, ~test], w[~test_np]), "weibull",
                     placement, [fit1.weights], optimizer)
            gain = (_log_probs(f1_all[:, test], w[test_np], b.weights)
                    - _log_probs(f0_all[:, test], w[test_np], a.weights))
            cv.append(float(gain.mean()))

    return {
        "placement": placement,
        "lambda_hat": fit1.lambdas["g"],
        "tau0_hat": fit0.tau,
        "tau1_hat": fit1.tau,
        "delta_mean": float(delta.mean()),
        "delta_ci": ci,
        "delta_se": delta_se,
        "delta_df": int(len(ids) - 1),
        # Δ̄ of each held-out batch (keys: batch ids): epochs of one run share the bank, so a
        # change of Δ̄ over training is a paired, batch-clustered difference
        "delta_by_batch": {str(int(b)): float(m) for b, m in zip(ids, batch_means, strict=True)},
        "exp_delta_mean": float(np.exp(delta.mean())),
        "t_pvalue": float(t_res.pvalue),
        # λ̂'s cluster-robust se (held-in batches); None on a boundary, where it means nothing
        "lambda_se": lam["se"],
        "lambda_df": lam["df"],
        "lambda_boundary": lam["boundary"],
        # both fits degenerate: H1 collapsed onto H0 (λ̂ = 0) or H0's τ̂ ran to its bound, so
        # Δ̄ = 0 holds by construction, not as a measurement
        "delta_degenerate": bool(fit1.lambdas["g"] == 0.0 or fit0.tau is None
                                 or not fit0.weights[0] < W_MAX),
        "lr_statistic": lr_obs,
        "lrt_pvalue": lrt_p,
        "lrt_replicates": lrt_replicates,
        # the smallest p a parametric bootstrap of R replicates can give: 1/(R + 1)
        "lrt_floor": 1.0 / (lrt_replicates + 1) if lrt_replicates > 0 else None,
        "cv_delta_mean": float(np.mean(cv)) if cv else None,
        "cv_delta_std": float(np.std(cv)) if cv else None,
        "start_spread": max(fit0.start_spread, fit1.start_spread),
        "n_heldin_anchors": int(held_in.sum()),
        "n_heldout_anchors": int((~held_in).sum()),
        "n_batches": int(len(np.unique(batch))),
        "n_candidates": int(s.shape[1]),
    }


def cluster_influence(scores: np.ndarray, winners: np.ndarray | None, fit: LinkFit,
                      batch_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-cluster influence of the fitted natural weights, for cluster-robust (sandwich)
    errors: anchors of one batch share its augmentation draw and its candidates, so the batch,
    not the anchor, is the independent unit (as in the paper's batch-clustered test, D.5).

    Returns (ψ, free, ids): ψ is (clusters, weights), ψ_b = H⁻¹·U_b with H = Σ_i Cov_p(f_i)
    the observed information and U_b = Σ_{i ∈ b} (f_{i,w_i} − E_p[f_i]) the score of batch b,
    restricted to the weights off their bounds (``free``; a weight at a bound has no influence
    of this form: the fit is not interior there). cov(ŵ) ≈ G/(G − 1)·Σ_b ψ_b ψ_bᵀ."""
    s, w = _choices(scores, winners)
    f = _tensor(s, fit.model)
    wt = torch.from_numpy(fit.weights)
    logits = torch.tensordot(wt, f, dims=1)
    p = torch.softmax(logits, dim=1)
    mean = (f * p).sum(dim=2)  # E_p[f_i], (k, anchors)
    chosen = f[:, torch.arange(f.shape[1]), torch.from_numpy(w)]
    u = (chosen - mean).numpy().T  # (anchors, k) per-anchor scores
    second = torch.tensordot(f * p, f, dims=([1, 2], [1, 2])).numpy()
    info = second - mean.numpy() @ mean.numpy().T  # Σ_i Cov_p(f_i)
    lo, hi = _bounds(fit.model, fit.placement)
    x = fit.weights
    free = ~((x <= lo + 1e-12) | (x >= hi - 1e-12 * np.maximum(hi, 1.0)))
    ids, inv = np.unique(np.asarray(batch_ids), return_inverse=True)
    u_b = np.zeros((len(ids), u.shape[1]))
    np.add.at(u_b, inv, u)
    psi = np.zeros_like(u_b)
    if free.any():
        h = info[np.ix_(free, free)]
        psi[:, free] = np.linalg.lstsq(h, u_b[:, free].T, rcond=None)[0].T
    return psi, free, ids


def lambda_gradient(fit: LinkFit, feature: str = "g") -> np.ndarray:
    """∂λ/∂w of one blend weight (g: Weibull, h: Fréchet) in the natural weights: inside,
    λ = w_f/Σw; outside, λ = w_f itself."""
    names = MODELS[fit.model]
    j = names.index(feature)
    w = fit.weights
    if fit.placement == "outside":
        grad = np.zeros_like(w)
        grad[j] = 1.0
        return grad
    total = float(w.sum())
    if total <= 0:  # τ → ∞: λ is not defined, it has no gradient
        return np.zeros_like(w)
    grad = -np.full_like(w, w[j] / total**2)
    grad[j] += 1.0 / total
    return grad


def lambda_cluster_se(scores: np.ndarray, winners: np.ndarray | None, fit: LinkFit,
                      batch_ids: np.ndarray, feature: str = "g") -> dict[str, float | int | bool | None]:
    """λ̂ with its cluster-robust standard error (delta method on the sandwich, clusters =
    batches, t reference with G − 1 df). On a boundary (λ̂ = 0, or 1 outside, or τ at its cap)
    the MLE is not asymptotically normal: ``boundary`` is True and the se is None (the report
    prints λ̂ as undefined there)."""
    psi, free, ids = cluster_influence(scores, winners, fit, batch_ids)
    g = len(ids)
    lam = fit.lambdas.get(feature)
    names = MODELS[fit.model]
    j = names.index(feature)
    boundary = bool(not free.all()) or lam is None or not np.isfinite(lam)
    if fit.placement == "inside" and not free[j]:
        boundary = True
    if boundary or g < 2:
        return {"se": None, "df": g - 1, "clusters": g, "boundary": boundary}
    se = cluster_robust_se(psi @ lambda_gradient(fit, feature))
    return {"se": se, "df": g - 1, "clusters": g, "boundary": False}


def cluster_robust_se(influence: np.ndarray) -> float:
    """√(G/(G − 1)·Σ_b ψ_b²) of an estimate's influences ψ_b over G ≥ 2 clusters."""
    g = len(influence)
    return float(np.sqrt(g / (g - 1) * np.sum(influence**2)))


def _parametric_bootstrap_lrt(s: np.ndarray, fit0: LinkFit, fit1: LinkFit, lr_obs: float,
                              replicates: int, rng: np.random.Generator,
                              optimizer: str = "newton") -> float:
    """p = (1 + #{LR* ≥ LR}) / (1 + R), winners simulated from the fitted H0 on fixed scores."""
    f0, f1 = _tensor(s, "softmax"), _tensor(s, "weibull")
    logits = fit0.weights[0] * s
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    exceed = 0
    for _ in range(replicates):
        u = rng.random((len(s), 1))
        w_sim = np.minimum((cdf < u).sum(axis=1), s.shape[1] - 1)  # inverse-CDF draw per row
        a = _fit(f0, _stats(f0, w_sim), "softmax", fit0.placement, [fit0.weights], optimizer)
        b = _fit(f1, _stats(f1, w_sim), "weibull", fit1.placement,
                 # τ̂0 = ∞ (weight 0) when the winners carry no preference: start from a hot τ
                 [_natural("weibull", fit1.placement, 1.0 / max(a.weights[0], 1e-6), (0.01,))],
                 optimizer)
        exceed += 2.0 * (b.loglik - a.loglik) >= lr_obs
    return (1 + exceed) / (1 + replicates)
