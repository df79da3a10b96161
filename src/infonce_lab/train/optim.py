"""Optimizers for both training loops: Adam (the paper's), AdamW, SGD and LARS.

WEINCE App. F.2: the paper trains with Adam at lr 3e-4 (its code passes no weight decay; the paper
text says 1e-6 — the caller chooses). LARS and SGD are here for the large-batch SimCLR recipe,
where biases and norm parameters are excluded from weight decay and from the layer-wise
adaptation; Adam and AdamW get every parameter in one group, as in the paper's code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import torch
from torch import nn

OptimizerName = Literal["adam", "adamw", "sgd", "lars"]


class LARS(torch.optim.Optimizer):
    """Layer-wise Adaptive Rate Scaling (You et al. 2017) as used by SimCLR and solo-learn.

    Per parameter tensor w with gradient g, in a group that is not ``lars_exclude``::

        trust = η·‖w‖ / (‖g‖ + wd·‖w‖ + eps)     (1 where ‖w‖ = 0 or ‖g‖ + wd·‖w‖ = 0)
        u     = trust · (g + wd·w)
        buf   = momentum·buf + u                  (buf = u on the first step)
        w    ← w − lr·buf

    In an excluded group (``lars_exclude=True``; SimCLR puts biases and BN/LN parameters there)
    u = g: no trust ratio and no weight decay, so the group is plain SGD with momentum.

    lr multiplies the momentum buffer rather than entering it (the torch SGD / solo-learn
    convention; SimCLR's TF code puts lr inside). The two coincide at a constant lr and differ
    slightly while a schedule moves lr.

    With wd = 0 and momentum = 0 a step moves each adapted tensor by lr·η·‖w‖ in the direction of
    −g, whatever ‖g‖ is: the step is relative to the weight's size. There is no clipping of the
    trust ratio (SimCLR does not clip), so a large η gives proportionally large steps.

    Trust ratios are computed as tensors (``torch.where``), never ``.item()``, so a step does not
    synchronise with the GPU.
    """

    def __init__(self, params: Iterable[torch.Tensor] | Iterable[dict[str, Any]], lr: float,
                 momentum: float = 0.9, weight_decay: float = 0.0,
                 trust_coefficient: float = 0.001, eps: float = 1e-8) -> None:
        if lr < 0.0:
            raise ValueError(f"invalid learning rate {lr}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"invalid momentum {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"invalid weight_decay {weight_decay}")
        if trust_coefficient <= 0.0:
            raise ValueError(f"invalid trust_coefficient {trust_coefficient}")
        if eps < 0.0:
            raise ValueError(f"invalid eps {eps}")
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay,
                    "trust_coefficient": trust_coefficient, "eps": eps, "lars_exclude": False}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            wd, eta, eps = group["weight_decay"], group["trust_coefficient"], group["eps"]
            exclude = bool(group["lars_exclude"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("LARS does not support sparse gradients")
                update = p.grad
                if not exclude:
                    w_norm = torch.linalg.vector_norm(p)
                    g_norm = torch.linalg.vector_norm(update)
                    scale = g_norm + wd * w_norm
                    trust = torch.where((w_norm > 0) & (scale > 0),
                                        eta * w_norm / (scale + eps), torch.ones_like(w_norm))
                    update = update.add(p, alpha=wd).mul_(trust)
                if momentum != 0.0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = update.detach().clone()
                    else:
                        buf.mul_(momentum).add_(update)
                    update = buf
                p.add_(update, alpha=-lr)
        return loss


def param_groups(model: nn.Module, weight_decay: float,
                 exclude_bias_and_norm: bool) -> list[dict[str, Any]]:
    """Trainable parameters split for SGD/LARS.

    With ``exclude_bias_and_norm`` the 1-D tensors — biases and BN/LN scales and shifts — form a
    group with weight_decay 0 and ``lars_exclude=True`` (SimCLR's exclusion); the rest keep
    ``weight_decay``. Empty groups are dropped. Without it, one group holds everything.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if not exclude_bias_and_norm:
        return [{"params": params, "weight_decay": weight_decay, "lars_exclude": False}]
    decayed = [p for p in params if p.ndim > 1]
    excluded = [p for p in params if p.ndim <= 1]
    groups: list[dict[str, Any]] = []
    if decayed:
        groups.append({"params": decayed, "weight_decay": weight_decay, "lars_exclude": False})
    if excluded:
        groups.append({"params": excluded, "weight_decay": 0.0, "lars_exclude": True})
    return groups


def build_optimizer(name: OptimizerName, model: nn.Module, lr: float, weight_decay: float,
                    momentum: float = 0.9, *, exclude_bias_and_norm: bool = True,
                    extra: nn.Module | None = None, fused: bool = False) -> torch.optim.Optimizer:
    """The one optimizer builder of both training loops.

    Adam/AdamW get every trainable parameter of ``model`` in one group (WEINCE App. F.2: Adam; lr
    3e-4 as in its code); SGD/LARS get :func:`param_groups` (SimCLR's exclusion of 1-D tensors
    when ``exclude_bias_and_norm``). ``extra`` is a loss with parameters (SigLIP's temperature and
    bias): its own group, without weight decay or LARS adaptation — decaying a log-temperature
    towards 0 would pull τ towards 1. Adam/AdamW take torch's foreach route on every device: the
    per-tensor update's arithmetic, bit for bit (tested), in one call per operation instead of one
    per tensor (the CPU's default is the per-tensor loop). ``fused`` (Adam/AdamW only) is one
    kernel over all tensors, the same update to float rounding.
    """
    if name in ("adam", "adamw"):
        groups: list[dict[str, Any]] = [
            {"params": [p for p in model.parameters() if p.requires_grad]}]
    elif name in ("sgd", "lars"):
        groups = param_groups(model, weight_decay, exclude_bias_and_norm)
    else:
        raise ValueError(f"unknown optimizer {name!r}; expected adam, adamw, sgd or lars")
    learned = [p for p in extra.parameters() if p.requires_grad] if extra is not None else []
    if learned:
        groups.append({"params": learned, "weight_decay": 0.0, "lars_exclude": True})
    if name in ("adam", "adamw"):
        cls = torch.optim.Adam if name == "adam" else torch.optim.AdamW
        kw = {"fused": True} if fused else {"foreach": True}
        return cls(groups, lr=lr, weight_decay=weight_decay, **kw)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum)
    return LARS(groups, lr=lr, momentum=momentum, weight_decay=weight_decay)
