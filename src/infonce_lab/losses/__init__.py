"""Contrastive losses. Each takes two views ``z1, z2`` (N, d), normalises them itself and returns
``(loss, stats)`` with ``stats`` a dict of detached tensors for telemetry."""

from infonce_lab.losses.infonce import info_nce, pair_similarities
from infonce_lab.losses.registry import build_loss

__all__ = ["build_loss", "info_nce", "pair_similarities"]
