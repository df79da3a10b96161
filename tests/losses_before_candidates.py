"""The InfoNCE and WEINCE losses as they were before the candidate-set knob (commit 4c16d71,
src/infonce_lab/losses/{common,infonce,weince}.py, imports merged): the reference that
tests/test_losses_candidates.py holds the default ``candidates: all_views`` to, bit for bit, so
the image study's results cannot move. Frozen: do not edit."""

# ruff: noqa

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


def pair_similarities(z1: torch.Tensor, z2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine matrix of the 2N stacked views and each anchor's positive index.

    Rows 0..N−1 are view 1, rows N..2N−1 view 2; the positive of row i is row (i + N) mod 2N. The
    diagonal (self-pairs) is left as computed: callers mask it. Reduced-precision inputs are
    promoted to float32 (DESIGN: precision); float64 stays float64.
    """
    if z1.shape != z2.shape or z1.ndim != 2:
        raise ValueError(f"z1 and z2 must both be (N, d); got {tuple(z1.shape)} and {tuple(z2.shape)}")
    n = z1.shape[0]
    if n < 2:
        raise ValueError("a contrastive batch needs N >= 2 pairs")
    z = torch.cat([z1, z2], dim=0)
    if z.dtype in (torch.float16, torch.bfloat16):
        z = z.float()
    z = F.normalize(z, dim=1)
    pos = torch.arange(2 * n, device=z.device).roll(n)
    return z @ z.T, pos


def self_mask(m: int, device: torch.device) -> torch.Tensor:
    return torch.eye(m, dtype=torch.bool, device=device)


def negatives_mask(pos: torch.Tensor) -> torch.Tensor:
    """True where column j is a negative of row i (neither i itself nor its positive)."""
    m = pos.shape[0]
    mask = ~self_mask(m, pos.device)
    mask[torch.arange(m, device=pos.device), pos] = False
    return mask


@torch.no_grad()
def hardest_negatives(sim: torch.Tensor, pos: torch.Tensor, m: int) -> torch.Tensor:
    """Column indices of each row's ``m`` most similar negatives (no gradient through the choice)."""
    masked = sim.detach().masked_fill(~negatives_mask(pos), float("-inf"))
    return masked.topk(min(m, sim.shape[0] - 2), dim=1).indices


def topm_cross_entropy(
    sim: torch.Tensor, pos: torch.Tensor, m: int, logit: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """Cross-entropy over [positive | m hardest negatives] with logits ``logit(s)``."""
    rows = torch.arange(sim.shape[0], device=sim.device)
    idx = hardest_negatives(sim, pos, m)
    s = torch.cat([sim[rows, pos].unsqueeze(1), sim.gather(1, idx)], dim=1)
    target = torch.zeros(sim.shape[0], dtype=torch.long, device=sim.device)
    return F.cross_entropy(logit(s), target)


@torch.no_grad()
def similarity_stats(z1: torch.Tensor, z2: torch.Tensor) -> dict[str, torch.Tensor]:
    """Telemetry of a batch: positive and negative cosine summaries (computed on log steps only)."""
    sim, pos = pair_similarities(z1.detach(), z2.detach())
    rows = torch.arange(sim.shape[0], device=sim.device)
    s_neg = sim[negatives_mask(pos)]
    # torch.quantile refuses inputs above 2^24 elements; a prefix is plenty for telemetry.
    q = torch.tensor([0.5, 0.9, 0.99], device=sim.device, dtype=sim.dtype)
    qs = torch.quantile(s_neg[: 1 << 24], q)
    return {
        "pos_sim": sim[rows, pos].mean(),
        "neg_sim_mean": s_neg.mean(),
        "neg_sim_q50": qs[0],
        "neg_sim_q90": qs[1],
        "neg_sim_q99": qs[2],
        "neg_sim_max": s_neg.max(),
        "top1_acc": (sim.masked_fill(self_mask(sim.shape[0], sim.device), -2).argmax(1) == pos)
        .float()
        .mean(),
    }


def info_nce(
    z1: torch.Tensor,
    z2: torch.Tensor,
    temperature: float,
    decoupled: bool = False,
    topm_weight: float = 0.0,
    top_m: int = 50,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean over the 2N anchors of −log softmax(s/τ) at the positive.

    ``decoupled`` leaves the positive out of the denominator (DCL, Yeh et al. 2022).
    ``topm_weight`` > 0 adds that weight times the softmax cross-entropy over [positive | top_m
    hardest negatives]: the control for WEINCE's released recipe (SPECS A.6), so a WEINCE gain
    cannot be credited to its auxiliary hard-negative term.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    sim, pos = pair_similarities(z1, z2)
    m = sim.shape[0]
    logits = (sim / temperature).masked_fill(self_mask(m, sim.device), float("-inf"))
    if decoupled:
        rows = torch.arange(m, device=sim.device)
        pos_logit = logits[rows, pos]
        neg_logits = logits.clone()
        neg_logits[rows, pos] = float("-inf")
        loss = (torch.logsumexp(neg_logits, dim=1) - pos_logit).mean()
    else:
        loss = F.cross_entropy(logits, pos)
    if topm_weight > 0:
        loss = loss + topm_weight * topm_cross_entropy(sim, pos, top_m, lambda s: s / temperature)
    return loss, {}


LambdaMode = str  # "product" | "rho" | "aic" | "fixed"


@dataclass(frozen=True)
class TailFit:
    """Per-anchor tail statistics (all detached)."""

    rho: torch.Tensor  # (2N,) smallest shortfall
    beta_hat: torch.Tensor  # (2N,) Weibull slope, clamped at 0
    delta_aic: torch.Tensor  # (2N,) AIC_G − AIC_W (> 0 favours Weibull)
    r2_weibull: torch.Tensor  # (2N,) R² of the Weibull line
    k_tail: int
    n_fit: int


def tail_size(k_neg: int, frac: float, min_points: int, floor: int = 10) -> int:
    """K_tail = max(min_points, round(frac·K_neg)), clipped to [floor, K_neg] (SPECS A.4.1)."""
    k = max(min_points, int(round(frac * k_neg)))
    return max(1, min(max(k, floor), k_neg))


def _masked_negatives(sim: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """A detached copy of ``sim`` with self-pairs and positives at −inf (one m×m temporary)."""
    masked = sim.detach().clone()
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
    tail_frac: float = 0.10,
    min_tail_points: int = 32,
    eps: float = 1e-6,
) -> TailFit:
    """SPECS A.4.1–A.4.5 for every anchor at once, in float64."""
    m = sim.shape[0]
    k_neg = m - 2
    k = tail_size(k_neg, tail_frac, min_tail_points)
    top = _masked_negatives(sim, pos).topk(k, dim=1, sorted=True).values.double()
    delta = (1.0 - top).clamp_min(eps)  # largest scores = smallest shortfalls, ascending
    burn = max(1, k // 20)
    ranks = torch.arange(1, k + 1, dtype=torch.float64, device=sim.device)
    f_hat = ranks / (k + 1)
    x = delta[:, burn:].log()
    y_w = f_hat[burn:].log()
    y_g = (-f_hat[burn:].log()).log()
    n = k - burn
    slope_w, sse_w, syy_w = _ols(x, y_w)
    slope_g, sse_g, _ = _ols(x, y_g)
    sse_w = sse_w.clamp_min(1e-12) + 1e6 * (slope_w <= 0)
    sse_g = sse_g.clamp_min(1e-12) + 1e6 * (slope_g >= 0)
    delta_aic = n * (sse_g / sse_w).log()
    r2 = 1.0 - (sse_w.clamp(max=syy_w) / syy_w.clamp_min(1e-300))
    return TailFit(rho=delta[:, 0], beta_hat=slope_w.clamp_min(0.0), delta_aic=delta_aic,
                   r2_weibull=r2, k_tail=k, n_fit=n)


@torch.no_grad()
def batch_pivot(rho: torch.Tensor, q: float) -> torch.Tensor:
    """ρ0: the element at index round(q·(2N−1)) of the sorted ρ (SPECS A.4.6)."""
    idx = int(round(q * (rho.numel() - 1)))
    return rho.sort().values[idx]


@torch.no_grad()
def mixing_weights(
    fit: TailFit,
    rho0: torch.Tensor,
    mode: LambdaMode = "product",
    kappa_rho: float = 10.0,
    kappa_aic: float = 1.0,
    aic_margin: float = 2.0,
    fixed: float = 0.0,
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
    """−log(1 − s) with s clamped at 1 − ε (no gradient above the clamp; SPECS A.4.8)."""
    return -torch.log1p(-s.clamp(max=1.0 - eps))


@torch.no_grad()
def global_tail_index(
    sim: torch.Tensor, pos: torch.Tensor, frac: float = 0.05, min_points: int = 1024,
    eps: float = 1e-6,
) -> tuple[float, float]:
    """The batch-level Weibull slope of the released recipe (SPECS A.6): (β̂, R²).

    All negatives of the batch are pooled; the K = max(min_points, frac·#negatives) smallest
    shortfalls get plotting positions k/(K+1), the first ⌊K/20⌋ are dropped, and log F̂ is
    regressed on log δ.
    """
    n_neg = sim.shape[0] * (sim.shape[0] - 2)
    k = min(n_neg, max(min_points, int(round(frac * n_neg))))
    top = _masked_negatives(sim, pos).flatten().topk(k, sorted=True).values.double()
    delta = (1.0 - top).clamp_min(eps)
    burn = k // 20
    ranks = torch.arange(1, k + 1, dtype=torch.float64, device=sim.device)
    x = delta[burn:].log().unsqueeze(0)
    y = (ranks / (k + 1))[burn:].log()
    slope, sse, syy = _ols(x, y)
    r2 = 1.0 - float(sse[0]) / max(float(syy[0]), 1e-300)
    return float(slope[0]), r2


class _BlendedCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of ℓ = a_i·s_ij + b_i·(−log(1 − min(s_ij, 1 − ε))) over j ≠ i.

    Hand-written because autograd would keep five m×m intermediates of the elementwise blend;
    here the forward keeps only the softmax (computed in place in the logit buffer) and the
    backward is dℓ/ds = a_i + b_i/(1 − s_ij) below the clamp, a_i above it. ``a`` and ``b`` are
    stop-gradient by construction (SPECS A.4.9). Checked against autograd by gradcheck.
    """

    @staticmethod
    def forward(ctx, sim, a, b, pos, eps):  # noqa: ANN001, ANN205
        m = sim.shape[0]
        rows = torch.arange(m, device=sim.device)
        logits = torch.log1p(-sim.clamp(max=1.0 - eps)).neg_().mul_(b).addcmul_(sim, a)
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
        return grad, None, None, None, None


def weince(
    z1: torch.Tensor,
    z2: torch.Tensor,
    temperature: float,
    *,
    tail_frac: float = 0.10,
    min_tail_points: int = 32,
    q: float = 0.2,
    kappa_rho: float = 10.0,
    kappa_aic: float = 1.0,
    aic_margin: float = 2.0,
    lambda_mode: LambdaMode = "product",
    lambda_fixed: float = 0.0,
    beta: str = "one",
    beta_clip: tuple[float, float] = (0.5, 16.0),
    eps: float = 1e-6,
    weib_topm_weight: float = 0.0,
    pl_topm_weight: float = 0.0,
    top_m: int = 50,
    beta_t: float = 4.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """WEINCE loss (Eq. 3.1/3.2) and its detached statistics.

    ``beta="one"`` is the released code (β ≡ 1 in the shortfall logit); ``beta="per_anchor"`` uses
    β̂_i clipped to ``beta_clip`` (the paper's Eq. 3.1; the clip is our choice, SPECS A.4.7).
    ``weib_topm_weight``/``pl_topm_weight`` > 0 add the released recipe's two auxiliary terms over
    [positive | top_m hardest negatives] with logits −β_t·log(1 − s) and s/τ (SPECS A.6); the
    caller owns the EMA of ``beta_t`` (see :class:`infonce_lab.losses.registry.WeinceLoss`).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    sim, pos = pair_similarities(z1, z2)
    fit = tail_fit(sim, pos, tail_frac, min_tail_points, eps)
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
    loss = _BlendedCrossEntropy.apply(sim, a, b, pos, eps)
    if weib_topm_weight > 0:
        loss = loss + weib_topm_weight * topm_cross_entropy(
            sim, pos, top_m, lambda s: beta_t * shortfall_logit(s, eps))
    if pl_topm_weight > 0:
        loss = loss + pl_topm_weight * topm_cross_entropy(sim, pos, top_m, lambda s: s / temperature)
    stats = {
        "lambda": lam.detach(),
        "beta_hat": fit.beta_hat.detach(),
        "rho0": rho0.detach(),
        "delta_aic": fit.delta_aic.detach(),
    }
    return loss, stats
