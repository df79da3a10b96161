"""Build a loss object ``(z1, z2, tau) -> (loss, stats)`` from its params section.

Loss objects are tiny callables; the only state any of them holds is WEINCE's recipe EMA of the
global tail index β_t, exposed through ``state_dict`` so a checkpoint can carry it. ``candidates``
names the candidate set a loss scores (telemetry describes the same set).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch

from infonce_lab.config import (
    DirectAUConfig,
    InfoNCEConfig,
    LossConfig,
    SymmetricInfoNCEConfig,
    WeinceConfig,
)
from infonce_lab.losses.common import candidate_similarities
from infonce_lab.losses.directau import direct_au
from infonce_lab.losses.infonce import info_nce, symmetric_info_nce
from infonce_lab.losses.weince import global_tail_index, weince


class Loss(Protocol):
    candidates: str

    def __call__(
        self, z1: torch.Tensor, z2: torch.Tensor, tau: float
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class _Stateless:
    candidates = "all_views"

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class InfoNCELoss(_Stateless):
    """``tau_scale`` ≠ 1 runs InfoNCE at ``tau_scale`` × the schedule's τ (a temperature control
    that shares its schedule with the losses it controls)."""

    def __init__(self, cfg: InfoNCEConfig) -> None:
        self.cfg = cfg
        self.candidates = cfg.candidates

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        c = self.cfg
        scaled = c.tau_scale != 1.0
        if scaled:
            tau = tau * c.tau_scale
        loss, stats = info_nce(z1, z2, tau, decoupled=c.decoupled, topm_weight=c.topm_weight,
                               top_m=c.top_m, candidates=c.candidates)
        if scaled:  # telemetry's "tau" is the schedule's; this is the one the loss used
            stats["tau_scaled"] = torch.tensor(float(tau))
        return loss, stats


class SymmetricInfoNCELoss(_Stateless):
    def __init__(self, cfg: SymmetricInfoNCEConfig) -> None:
        self.cfg = cfg

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        return symmetric_info_nce(z1, z2, tau)


class DirectAULoss(_Stateless):
    """``schedule_drives: t`` maps the schedule's τ to the uniformity kernel's t = 1/(2τ).

    On the unit sphere exp(−t‖u − v‖²) = e^{−2t}·exp(2t·uᵀv): the kernel is a softmax-style weight
    with inverse temperature 2t, which matches InfoNCE's exp(uᵀv/τ) when t = 1/(2τ).
    """

    def __init__(self, cfg: DirectAUConfig) -> None:
        self.cfg = cfg

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        c = self.cfg
        t = 1.0 / (2.0 * tau) if c.schedule_drives == "t" else c.t
        loss, stats = direct_au(z1, z2, alpha=c.alpha, t=t, weight=c.weight)
        stats["uniformity_t"] = torch.tensor(t)
        return loss, stats


class WeinceLoss:
    def __init__(self, cfg: WeinceConfig) -> None:
        self.cfg = cfg
        self.beta_t = cfg.auto_beta.init
        self.candidates = cfg.candidates

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        c = self.cfg
        loss, stats = weince(
            z1, z2, tau, tail_frac=c.tail_frac, min_tail_points=c.min_tail_points, q=c.q,
            kappa_rho=c.kappa_rho, kappa_aic=c.kappa_aic, aic_margin=c.aic_margin,
            lambda_mode=c.lambda_mode, lambda_fixed=c.lambda_fixed, beta=c.beta,
            beta_clip=tuple(c.beta_clip), eps=c.eps, weib_topm_weight=c.weib_topm_weight,
            pl_topm_weight=c.pl_topm_weight, top_m=c.top_m, beta_t=self.beta_t,
            candidates=c.candidates,
        )
        if c.weib_topm_weight > 0:
            stats["beta_t"] = torch.tensor(self.beta_t)
            self._update_beta_t(z1, z2)
        return loss, stats

    @torch.no_grad()
    def _update_beta_t(self, z1: torch.Tensor, z2: torch.Tensor) -> None:
        a = self.cfg.auto_beta
        sim, pos, has_self = candidate_similarities(z1.detach(), z2.detach(), self.cfg.candidates)
        beta_hat, r2 = global_tail_index(sim, pos, a.frac, a.min_points, self.cfg.eps, has_self)
        if r2 >= a.r2_min and beta_hat > 0:
            beta_hat = min(max(beta_hat, a.clip[0]), a.clip[1])
            self.beta_t = a.ema * self.beta_t + (1.0 - a.ema) * beta_hat

    def state_dict(self) -> dict[str, Any]:
        return {"beta_t": self.beta_t}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.beta_t = float(state.get("beta_t", self.beta_t))


# One builder per schema kind (tests/test_registries.py holds it against the LossConfig union).
LOSSES: dict[type, Callable[[Any], Loss]] = {
    InfoNCEConfig: InfoNCELoss,
    WeinceConfig: WeinceLoss,
    DirectAUConfig: DirectAULoss,
    SymmetricInfoNCEConfig: SymmetricInfoNCELoss,
}


def build_loss(cfg: LossConfig) -> Loss:
    if type(cfg) not in LOSSES:
        raise ValueError(f"unknown loss config {type(cfg).__name__}")
    return LOSSES[type(cfg)](cfg)


def summarise_stats(stats: dict[str, torch.Tensor]) -> dict[str, float]:
    """Scalars as they are; per-anchor vectors as mean and quantiles (λ also: share above ½)."""
    out: dict[str, float] = {}
    for name, v in stats.items():
        v = v.detach().float().flatten()
        if v.numel() == 1:
            out[name] = float(v)
            continue
        qs = torch.quantile(v, torch.tensor([0.1, 0.5, 0.9], dtype=v.dtype, device=v.device))
        out[f"{name}_mean"] = float(v.mean())
        out[f"{name}_q10"], out[f"{name}_q50"], out[f"{name}_q90"] = (float(x) for x in qs)
        if name == "lambda":
            out["lambda_frac_gt_half"] = float((v > 0.5).float().mean())
    return out
