"""Activation memory of a training forward pass, estimated before the batch is allocated.

The tensors autograd keeps for the backward pass are the activations a training step holds at
its peak, whatever the architecture (ResNet stems, bottlenecks, ViT attention) — which a closed
form per backbone would have to re-derive and keep in step with torchvision. They are counted
under ``saved_tensors_hooks`` on two real forwards of 2 and 4 images and extrapolated to the
batch: every saved activation has the batch as its leading dimension, so the count is linear in
it and two points fix it (the per-channel statistics of batch norm are the intercept). A pass on
torch's ``meta`` device would count the same without any data, but its first use imports the
reference decompositions (≈ 2.5 s measured per process, on every pretrain stage). Measured
against real CPU steps, the peak exceeds this count (convolution workspaces; most for the
tiny-channel digits ResNet), so it is a sound lower bound for refusing a size, not a prediction
of the peak.
"""

from __future__ import annotations

import torch

from infonce_lab.models import build_encoder
from infonce_lab.params import BackboneConfig


def _saved_bytes(encoder: torch.nn.Module, x: torch.Tensor) -> int:
    weights = {p.untyped_storage().data_ptr() for p in encoder.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        encoder(x)
    return sum(saved.values())


def training_activation_bytes(backbone: BackboneConfig, channels: int, size: int,
                              views: int) -> int:
    """Bytes of the activations one training forward of ``views`` images saves for backward."""
    rng = torch.get_rng_state()  # a throwaway encoder: the caller's random stream stays as it was
    encoder = build_encoder(backbone, channels, size).train()
    two, four = (_saved_bytes(encoder, torch.zeros(n, channels, size, size)) for n in (2, 4))
    torch.set_rng_state(rng)
    per_view = (four - two) / 2
    return int(two + per_view * (views - 2))
