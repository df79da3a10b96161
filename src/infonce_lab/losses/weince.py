"""WEINCE: Weibull-corrected InfoNCE (WEINCE §3, Eqs 3.1–3.2, App. E; and the released code's
recipe), vectorised over anchors.

Each anchor i gets a logit that blends the softmax (Gumbel) coordinate and the Weibull shortfall
coordinate,

    ℓ_ij = (1 − λ_i)·s_ij/τ + λ_i·β_i·(−log(1 − s_ij)),

with λ_i computed under no-grad from the tail of anchor i's negative shortfalls δ_ij = 1 − s_ij:
a cap-proximity signal ρ_i = min_j δ_ij against a batch pivot ρ0, and an AIC comparison of a
Weibull line and a Gumbel proxy fitted to the K_tail smallest shortfalls. Every step is a batched
tensor operation over the anchors (no Python loop over anchors).

The anchors and their candidates follow ``candidates`` (:mod:`infonce_lab.losses.common`): with
``all_views`` (SimCLR, the released code) the 2N views are the anchors, each with 2N − 2
negatives, and ρ0 is taken over the 2N anchors; with ``cross_view`` (SimCSE's candidate set, the
paper's §4.2 setting) the N rows of view 1 are the anchors, the tail sets hold their N − 1
cross-view negatives and ρ0 is taken over the N anchors. Either way the statistics are
stop-gradient (WEINCE §4, App. F.2).

Usage — the bound loss the pipeline builds from a params section (the function takes every knob
by keyword, with no defaults of its own: they are the schema's, ``WeinceConfig``)::

    loss = build_loss(WeinceConfig(lambda_mode="aic"))  # pipeline.registry
    value, stats = loss(z1, z2, tau)  # stats: λ_i, β̂_i, ρ_i per anchor
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from infonce_lab.losses.common import (
    Candidates,
    candidate_similarities,
    n_negatives,
    topm_cross_entropy,
)

LambdaMode = Literal["product", "rho", "aic", "fixed"]
BetaMode = Literal["one", "per_anchor"]


@dataclass(frozen=True)
class TailFit:
    """Per-anchor tail statistics (all detached)."""

    rho: torch.Tensor  # (anchors,) smallest shortfall
    beta_hat: torch.Tensor  # (anchors,) Weibull slope, clamped at 0
    delta_aic: torch.Tensor  # (anchors,) AIC_G − AIC_W (> 0 favours Weibull)


def tail_size(k_neg: int, frac: float, min_points: int, floor: int = 10) -> int:
    """K_tail = max(min_points, round(frac·K_neg)), clipped to [floor, K_neg]: the released code's
    rule for the K_tail of WEINCE App. E."""
    k = max(min_points, int(round(frac * k_neg)))
    return max(1, min(max(k, floor), k_neg))


def _masked_negatives(sim: torch.Tensor, pos: torch.Tensor, has_self: bool = True) -> torch.Tensor:
    """A detached copy of ``sim`` with self-pairs and positives at −inf (one m×m temporary)."""
    masked = sim.detach().clone()
    if has_self:
        masked.fill_diagonal_(float("-inf"))
    masked[torch.arange(sim.shape[0], device=sim.device), pos] = float("-inf")
    return masked


def _ols(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Row-wise least squares with intercept of y (n,) on x (rows, n): slope, SSE and Syy.

    A row whose x values are all equal has no slope; we give it slope 0 and SSE = Syy (nothing
    explained), which the sign-sanity penalties then treat as a failed fit.
    """
    xc = x - x.mean(dim=1, keepdim=True)
    yc = y - y.mean()
    sxx = (xc * xc).sum(dim=1)
    sxy = (xc * yc).sum(dim=1)
    syy = (yc * yc).sum()
    ok = sxx > 1e-300
    slope = torch.where(ok, sxy / torch.where(ok, sxx, torch.ones_like(sxx)), torch.zeros_like(sxx))
    sse = syy - slope * sxy
    return slope, sse, syy.expand_as(sse)


@torch.no_grad()
def tail_fit(
    sim: torch.Tensor,
    pos: torch.Tensor,
    tail_frac: float,
    min_tail_points: int,
    eps: float,
    has_self: bool = True,
) -> TailFit:
    """The tail statistics of WEINCE App. E (ρ_i, Weibull and Gumbel-proxy fits, ΔAIC; as in the
    released code) for every anchor at once, in float64. K_neg is the anchor's number of
    negatives: 2N − 2 with the all-views candidates, N − 1 cross-view."""
    k_neg = n_negatives(sim.shape[1], has_self)
    k = tail_size(k_neg, tail_frac, min_tail_points)
    top = _masked_negatives(sim, pos, has_self).topk(k, dim=1, sorted=True).values.double()
    delta = (1.0 - top).clamp_min(eps)  # largest scores = smallest shortfalls, ascending
    burn = max(1, k // 20)
    ranks = torch.arange(1, k + 1, dtype=torch.float64, device=sim.device)
    f_hat = ranks / (k + 1)
    x = delta[:, burn:].log()
    y_w = f_hat[burn:].log()
    y_g = (-f_hat[burn:].log()).log()
    n = k - burn
    slope_w, sse_w, _ = _ols(x, y_w)
    slope_g, sse_g, _ = _ols(x, y_g)
    sse_w = sse_w.clamp_min(1e-12) + 1e6 * (slope_w <= 0)
    sse_g = sse_g.clamp_min(1e-12) + 1e6 * (slope_g >= 0)
    delta_aic = n * (sse_g / sse_w).log()
    return TailFit(rho=delta[:, 0], beta_hat=slope_w.clamp_min(0.0), delta_aic=delta_aic)


@torch.no_grad()
def batch_pivot(rho: torch.Tensor, q: float) -> torch.Tensor:
    """ρ0: the element at index round(q·(A − 1)) of the sorted ρ of the A anchors (the released
    code's pivot for WEINCE App. E; A = 2N with the all-views candidates, N cross-view)."""
    idx = int(round(q * (rho.numel() - 1)))
    return rho.sort().values[idx]


@torch.no_grad()
def mixing_weights(
    fit: TailFit,
    rho0: torch.Tensor,
    mode: LambdaMode,
    kappa_rho: float,
    kappa_aic: float,
    aic_margin: float,
    fixed: float,
) -> torch.Tensor:
    """λ_i = σ(κ_ρ(log ρ0 − log ρ_i))·σ(κ_AIC(ΔAIC_i − m)), or one factor, or a constant."""
    if mode == "fixed":
        return torch.full_like(fit.rho, fixed)
    lam_rho = torch.sigmoid(kappa_rho * (rho0.log() - fit.rho.log()))
    lam_aic = torch.sigmoid(kappa_aic * (fit.delta_aic - aic_margin))
    if mode == "rho":
        return lam_rho
    if mode == "aic":
        return lam_aic
    if mode == "product":
        return lam_rho * lam_aic
    raise ValueError(f"unknown lambda mode {mode!r}: expected product, rho, aic or fixed")


def shortfall_logit(s: torch.Tensor, eps: float) -> torch.Tensor:
    """−log(1 − s) with s clamped at 1 − ε (the released code's clamp; no gradient above it)."""
    return -torch.log1p(-s.clamp(max=1.0 - eps))


@torch.no_grad()
def global_tail_index(
    sim: torch.Tensor, pos: torch.Tensor, frac: float = 0.05, min_points: int = 1024,
    eps: float = 1e-6, has_self: bool = True,
) -> tuple[float, float]:
    """The batch-level Weibull slope of the released recipe (repository code only): (β̂, R²).

    All negatives of the batch are pooled; the K = max(min_points, frac·#negatives) smallest
    shortfalls get plotting positions k/(K+1), the first ⌊K/20⌋ are dropped, and log F̂ is
    regressed on log δ.
    """
    n_neg = sim.shape[0] * n_negatives(sim.shape[1], has_self)
    k = min(n_neg, max(min_points, int(round(frac * n_neg))))
    top = _masked_negatives(sim, pos, has_self).flatten().topk(k, sorted=True).values.double()
    delta = (1.0 - top).clamp_min(eps)
    burn = k // 20
    ranks = torch.arange(1, k + 1, dtype=torch.float64, device=sim.device)
    x = delta[burn:].log().unsqueeze(0)
    y = (ranks / (k + 1))[burn:].log()
    slope, sse, syy = _ols(x, y)
    r2 = 1.0 - float(sse[0]) / max(float(syy[0]), 1e-300)
    return float(slope[0]), r2


class _BlendedCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of ℓ = a_i·s_ij + b_i·(−log(1 − min(s_ij, 1 − ε))) over the candidate
    columns j (j ≠ i when ``has_self``: the diagonal is the anchor itself).

    Hand-written because autograd would keep five m×m intermediates of the elementwise blend;
    here the forward keeps only the softmax (computed in place in the logit buffer) and the
    backward is dℓ/ds = a_i + b_i/(1 − s_ij) below the clamp, a_i above it. ``a`` and ``b`` are
    stop-gradient by construction (WEINCE App. F.2). Checked against autograd by gradcheck.
    """

    @staticmethod
    def forward(ctx, sim, a, b, pos, eps, has_self=True):  # noqa: ANN001, ANN205
        m = sim.shape[0]
        rows = torch.arange(m, device=sim.device)
        logits = torch.log1p(-sim.clamp(max=1.0 - eps)).neg_().mul_(b).addcmul_(sim, a)
        if has_self:
            logits.fill_diagonal_(float("-inf"))
        lse = torch.logsumexp(logits, dim=1)
        loss = (lse - logits[rows, pos]).mean()
        prob = logits.sub_(lse.unsqueeze(1)).exp_()
        ctx.save_for_backward(sim, a, b, pos, prob)
        ctx.eps = eps
        return loss

    @staticmethod
    def backward(ctx, grad_out):  # noqa: ANN001, ANN205
        sim, a, b, pos, prob = ctx.saved_tensors
        m = sim.shape[0]
        grad = prob.clone()
        grad[torch.arange(m, device=sim.device), pos] -= 1.0
        slope = (1.0 - sim).reciprocal_().masked_fill_(sim >= 1.0 - ctx.eps, 0.0)
        grad.mul_(slope.mul_(b).add_(a)).mul_(grad_out / m)
        return grad, None, None, None, None, None


def weince(
    z1: torch.Tensor,
    z2: torch.Tensor,
    temperature: float,
    *,
    tail_frac: float,
    min_tail_points: int,
    q: float,
    kappa_rho: float,
    kappa_aic: float,
    aic_margin: float,
    lambda_mode: LambdaMode,
    lambda_fixed: float,
    beta: BetaMode,
    beta_clip: tuple[float, float],
    eps: float,
    weib_topm_weight: float,
    pl_topm_weight: float,
    top_m: int,
    beta_t: float,
    candidates: Candidates,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """WEINCE loss (Eq. 3.1/3.2) and its detached statistics.

    ``beta="one"`` is the released code (β ≡ 1 in the shortfall logit); ``beta="per_anchor"`` uses
    β̂_i clipped to ``beta_clip`` (the paper's Eq. 3.1; it gives no clip, ours is a choice).
    ``weib_topm_weight``/``pl_topm_weight`` > 0 add the released recipe's two auxiliary terms over
    [positive | top_m hardest negatives] with logits −β_t·log(1 − s) and s/τ (repository code); the
    caller owns the EMA of ``beta_t`` (see :class:`WeinceLoss`).
    ``candidates``: ``all_views`` (the released code) or ``cross_view`` (SimCSE's N candidates;
    tail sets, ρ0 and the top-M terms then use the cross-view negatives only).

    ``stats["inv_tau_eff"]`` is each anchor's effective inverse temperature
    (:func:`effective_inverse_temperature`), the InfoNCE 1/τ that would give the anchor the same
    logit gap between its positive and its hardest negative.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    sim, pos, has_self = candidate_similarities(z1, z2, candidates)
    fit = tail_fit(sim, pos, tail_frac, min_tail_points, eps, has_self)
    rho0 = batch_pivot(fit.rho, q)
    lam = mixing_weights(fit, rho0, lambda_mode, kappa_rho, kappa_aic, aic_margin, lambda_fixed)
    if beta == "one":
        beta_i = torch.ones_like(lam)
    elif beta == "per_anchor":
        beta_i = fit.beta_hat.clamp(*beta_clip)
    else:
        raise ValueError(f"unknown beta {beta!r}: expected 'one' or 'per_anchor'")
    a = ((1.0 - lam) / temperature).to(sim.dtype).unsqueeze(1)
    b = (lam * beta_i).to(sim.dtype).unsqueeze(1)
    loss = _BlendedCrossEntropy.apply(sim, a, b, pos, eps, has_self)
    if weib_topm_weight > 0:
        loss = loss + weib_topm_weight * topm_cross_entropy(
            sim, pos, top_m, lambda s: beta_t * shortfall_logit(s, eps), has_self)
    if pl_topm_weight > 0:
        loss = loss + pl_topm_weight * topm_cross_entropy(sim, pos, top_m, lambda s: s / temperature,
                                                          has_self)
    stats = {
        "lambda": lam.detach(),
        "beta_hat": fit.beta_hat.detach(),
        "rho0": rho0.detach(),
        "delta_aic": fit.delta_aic.detach(),
        "inv_tau_eff": effective_inverse_temperature(sim, pos, a, b, fit.rho, eps),
    }
    return loss, stats


@torch.no_grad()
def effective_inverse_temperature(sim: torch.Tensor, pos: torch.Tensor, a: torch.Tensor,
                                  b: torch.Tensor, rho: torch.Tensor, eps: float) -> torch.Tensor:
    """Per anchor, the slope of WEINCE's logit ℓ_i(s) = a_i·s + b_i·(−log(1 − s)) along the
    secant from its hardest negative s_i* = 1 − ρ_i to its positive s_i+:

        κ_i = a_i + b_i·[log(1 − s_i*) − log(1 − s_i+)] / (s_i+ − s_i*),

    (the tangent slope a_i + b_i/(1 − s) where the two coincide). A softmax is decided by logit
    gaps, so 1/κ_i is the InfoNCE temperature that gives anchor i the gap WEINCE gives it between
    the two candidates that decide its loss; for λ_i = 0 it is 1/τ exactly. Scores are clamped at
    1 − ε as in the loss (the released code's clamp), and ``rho`` is the tail fit's ρ_i (floored
    at ε).
    """
    rows = torch.arange(sim.shape[0], device=sim.device)
    cap = 1.0 - eps
    s_pos = sim.detach()[rows, pos].double().clamp(max=cap)
    s_neg = (1.0 - rho.double()).clamp(max=cap)
    a64, b64 = a.detach().double().flatten(), b.detach().double().flatten()
    gap = s_pos - s_neg
    close = gap.abs() < 1e-9
    secant = (torch.log1p(-s_neg) - torch.log1p(-s_pos)) / torch.where(close, 1.0, gap)
    tangent = 1.0 / (1.0 - 0.5 * (s_pos + s_neg))
    return a64 + b64 * torch.where(close, tangent, secant)


@dataclass(frozen=True)
class AutoBeta:
    """The released recipe's global tail index β_t: a batch-level Weibull fit, EMA over steps."""

    frac: float
    min_points: int
    r2_min: float
    clip: tuple[float, float]
    ema: float
    init: float


class WeinceLoss:
    """WEINCE (Eq. 3.1/3.2) with its knobs bound; ``weince_kwargs`` are :func:`weince`'s."""

    needs_labels: bool = False

    def __init__(self, *, auto_beta: AutoBeta, candidates: Candidates, **weince_kwargs: Any
                 ) -> None:
        self.auto_beta, self.candidates, self.kwargs = auto_beta, candidates, weince_kwargs
        self.beta_t = auto_beta.init

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        loss, stats = weince(z1, z2, tau, beta_t=self.beta_t, candidates=self.candidates,
                             **self.kwargs)
        if self.kwargs["weib_topm_weight"] > 0:
            stats["beta_t"] = torch.tensor(self.beta_t)
            self._update_beta_t(z1, z2)
        return loss, stats

    @torch.no_grad()
    def _update_beta_t(self, z1: torch.Tensor, z2: torch.Tensor) -> None:
        a = self.auto_beta
        sim, pos, has_self = candidate_similarities(z1.detach(), z2.detach(), self.candidates)
        beta_hat, r2 = global_tail_index(sim, pos, a.frac, a.min_points, self.kwargs["eps"],
                                         has_self)
        if r2 >= a.r2_min and beta_hat > 0:
            beta_hat = min(max(beta_hat, a.clip[0]), a.clip[1])
            self.beta_t = a.ema * self.beta_t + (1.0 - a.ema) * beta_hat

    def state_dict(self) -> dict[str, Any]:
        return {"beta_t": self.beta_t}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.beta_t = float(state.get("beta_t", self.beta_t))
