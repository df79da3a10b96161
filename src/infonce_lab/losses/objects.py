"""The contract of a loss object ``(z1, z2, tau) -> (loss, stats)``: a loss function with its knobs
bound, defined beside its function in the loss's own module (losses/infonce.py, weince.py,
directau.py, siglip.py).

They take numbers (the pipeline's registry builds them from the params sections). Most are tiny
stateless objects (:class:`StatelessLoss`); WEINCE's recipe holds an EMA of the global tail index
β_t, and a loss with learnable parameters (SigLIP's temperature and bias) is an ``nn.Module``
whose parameters the training loop hands to the optimizer. ``state_dict`` carries either kind of
state through a checkpoint; ``candidates`` names the candidate set a loss scores (telemetry
describes the same set); ``needs_labels`` says the loop must hand it the batch's class labels
(only InfoNCE's label oracle does). :class:`Loss` is the contract, :func:`protocol_gaps` checks it.
"""

from __future__ import annotations

from typing import Any, Protocol, get_args

import torch

from infonce_lab.losses.common import Candidates


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
