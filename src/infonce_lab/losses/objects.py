"""Loss objects ``(z1, z2, tau) -> (loss, stats)``: the loss functions with their knobs bound.

They take numbers (the pipeline's registry builds them from the params sections). Most are tiny
stateless objects (:class:`StatelessLoss`); WEINCE's recipe holds an EMA of the global tail index
β_t, and a loss with learnable parameters (SigLIP's temperature and bias) is an ``nn.Module``
whose parameters the training loop hands to the optimizer. ``state_dict`` carries either kind of
state through a checkpoint; ``candidates`` names the candidate set a loss scores (telemetry
describes the same set); ``needs_labels`` says the loop must hand it the batch's class labels
(only InfoNCE's label oracle does). :class:`Loss` is the contract, :func:`protocol_gaps` checks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, get_args

import torch

from infonce_lab.losses.common import Candidates, candidate_similarities
from infonce_lab.losses.directau import direct_au
from infonce_lab.losses.infonce import info_nce, symmetric_info_nce
from infonce_lab.losses.weince import global_tail_index, weince


class Loss(Protocol):
    """What the training loop calls, once per step, on the two views' projections.

    - ``loss(z1, z2, tau)``: ``z1, z2`` (N, d), not yet normalised, row i of each a positive
      pair; ``tau`` the schedule's temperature at this step. Returns a scalar tensor to
      minimise and ``stats``, a dict of detached scalar tensors (logged under their names).
    - ``candidates``: what each anchor is scored against — ``"all_views"`` (the other 2N − 1
      views, SimCLR's NT-Xent) or ``"cross_view"`` (the N views of the other side, SimCSE's);
      the telemetry measures the same set.
    - ``state_dict()`` / ``load_state_dict(state)``: the loss's own state through a checkpoint
      (``{}`` when it has none).
    - ``needs_labels``: True when the loss reads the batch's class labels; the loop then calls
      ``loss(z1, z2, tau, labels=y)`` with ``y`` (N,) the classes of the N pairs (−1: unknown)
      and never otherwise, so a loss that does not declare it (:func:`needs_labels`) keeps the
      three-argument call. Only a label oracle needs them: self-supervised training has none.

    A loss with learnable parameters is an ``nn.Module`` (``forward`` as above; the loop hands
    its parameters to the optimizer); one without derives from :class:`StatelessLoss`. Under
    ``torchrun`` the loop all-gathers ``z1, z2`` (and the labels, in the same rank order) first,
    so a loss always sees the global batch.
    """

    candidates: Candidates
    needs_labels: bool

    def __call__(
        self, z1: torch.Tensor, z2: torch.Tensor, tau: float
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def needs_labels(loss: object) -> bool:
    """Whether the loop must pass ``labels=`` to ``loss``: its ``needs_labels``, False when it
    declares none (an ``nn.Module`` loss such as SigLIP's reads no labels)."""
    return bool(getattr(loss, "needs_labels", False))


def protocol_gaps(loss: object) -> list[str]:
    """What ``loss`` lacks of :class:`Loss` (empty when it conforms): a plain function has no
    ``candidates`` and no state, and would fail only once training starts. ``needs_labels`` may
    be left out (False), but when declared it must be a bool."""
    gaps = [name for name in ("candidates", "state_dict", "load_state_dict")
            if not hasattr(loss, name)]
    if not callable(loss):
        gaps.insert(0, "__call__")
    elif getattr(loss, "candidates", "all_views") not in get_args(Candidates):
        gaps.append(f"candidates in {get_args(Candidates)}")
    if not isinstance(getattr(loss, "needs_labels", False), bool):
        gaps.append("needs_labels as a bool")
    return gaps


class StatelessLoss:
    """The base of a loss without state: scores every other view (``candidates``), reads no
    labels, and carries nothing through a checkpoint. A subclass defines
    ``__call__(z1, z2, tau) -> (loss, stats)`` (and takes ``labels=`` if it sets
    ``needs_labels``)."""

    candidates: Candidates = "all_views"
    needs_labels: bool = False

    def __call__(self, z1: torch.Tensor, z2: torch.Tensor, tau: float
                 ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class InfoNCELoss(StatelessLoss):
    """``tau_scale`` ≠ 1 runs InfoNCE at ``tau_scale`` × the schedule's τ (a temperature control
    that shares its schedule with the losses it controls). ``mask_same_class``: the label oracle
    (Chuang et al. 2020, §5), which needs the batch's labels (``needs_labels``)."""

    def __init__(self, *, decoupled: bool = False, topm_weight: float = 0.0, top_m: int = 50,
                 candidates: Candidates = "all_views", tau_scale: float = 1.0,
                 mask_same_class: bool = False) -> None:
        self.decoupled, self.topm_weight, self.top_m = decoupled, topm_weight, top_m
        self.candidates, self.tau_scale = candidates, tau_scale
        self.mask_same_class = self.needs_labels = mask_same_class

    def __call__(self, z1, z2, tau, labels=None):  # noqa: ANN001, ANN204
        if self.mask_same_class and labels is None:
            raise ValueError("mask_same_class: this InfoNCE masks same-class negatives and needs "
                             "the batch's labels (loss(z1, z2, tau, labels=y))")
        scaled = self.tau_scale != 1.0
        if scaled:
            tau = tau * self.tau_scale
        loss, stats = info_nce(z1, z2, tau, decoupled=self.decoupled,
                               topm_weight=self.topm_weight, top_m=self.top_m,
                               candidates=self.candidates,
                               labels=labels if self.mask_same_class else None)
        if scaled:  # telemetry's "tau" is the schedule's; this is the one the loss used
            stats["tau_scaled"] = torch.tensor(float(tau))
        return loss, stats


class SymmetricInfoNCELoss(StatelessLoss):
    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        return symmetric_info_nce(z1, z2, tau)


class DirectAULoss(StatelessLoss):
    """``schedule_drives: t`` maps the schedule's τ to the uniformity kernel's t = 1/(2τ).

    On the unit sphere exp(−t‖u − v‖²) = e^{−2t}·exp(2t·uᵀv): the kernel is a softmax-style weight
    with inverse temperature 2t, which matches InfoNCE's exp(uᵀv/τ) when t = 1/(2τ).
    """

    def __init__(self, *, alpha: float = 2.0, t: float = 2.0, weight: float = 1.0,
                 schedule_drives: str | None = None) -> None:
        self.alpha, self.t, self.weight, self.schedule_drives = alpha, t, weight, schedule_drives

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        t = 1.0 / (2.0 * tau) if self.schedule_drives == "t" else self.t
        loss, stats = direct_au(z1, z2, alpha=self.alpha, t=t, weight=self.weight)
        stats["uniformity_t"] = torch.tensor(t)
        return loss, stats


@dataclass(frozen=True)
class AutoBeta:
    """The released recipe's global tail index β_t: a batch-level Weibull fit, EMA over steps."""

    frac: float = 0.05
    min_points: int = 1024
    r2_min: float = 0.85
    clip: tuple[float, float] = (0.5, 16.0)
    ema: float = 0.9
    init: float = 4.0


class WeinceLoss:
    """WEINCE (Eq. 3.1/3.2) with its knobs bound; ``weince_kwargs`` are :func:`weince`'s."""

    needs_labels: bool = False

    def __init__(self, *, auto_beta: AutoBeta = AutoBeta(), candidates: Candidates = "all_views",
                 **weince_kwargs: Any) -> None:
        self.auto_beta, self.candidates, self.kwargs = auto_beta, candidates, weince_kwargs
        self.beta_t = auto_beta.init

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        loss, stats = weince(z1, z2, tau, beta_t=self.beta_t, candidates=self.candidates,
                             **self.kwargs)
        if self.kwargs.get("weib_topm_weight", 0.0) > 0:
            stats["beta_t"] = torch.tensor(self.beta_t)
            self._update_beta_t(z1, z2)
        return loss, stats

    @torch.no_grad()
    def _update_beta_t(self, z1: torch.Tensor, z2: torch.Tensor) -> None:
        a = self.auto_beta
        sim, pos, has_self = candidate_similarities(z1.detach(), z2.detach(), self.candidates)
        beta_hat, r2 = global_tail_index(sim, pos, a.frac, a.min_points,
                                         self.kwargs.get("eps", 1e-6), has_self)
        if r2 >= a.r2_min and beta_hat > 0:
            beta_hat = min(max(beta_hat, a.clip[0]), a.clip[1])
            self.beta_t = a.ema * self.beta_t + (1.0 - a.ema) * beta_hat

    def state_dict(self) -> dict[str, Any]:
        return {"beta_t": self.beta_t}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.beta_t = float(state.get("beta_t", self.beta_t))
