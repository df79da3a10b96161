"""Contrastive losses. Each takes two views ``z1, z2`` (N, d), normalises them itself and returns
``(loss, stats)`` with ``stats`` a dict of detached tensors for telemetry."""

from infonce_lab.losses.common import pair_similarities, similarity_stats
from infonce_lab.losses.directau import direct_au
from infonce_lab.losses.gather import gather_rows, gather_with_grad
from infonce_lab.losses.infonce import info_nce, symmetric_info_nce
from infonce_lab.losses.weince import weince

__all__ = [
    "direct_au",
    "gather_rows",
    "gather_with_grad",
    "info_nce",
    "pair_similarities",
    "similarity_stats",
    "symmetric_info_nce",
    "weince",
]
