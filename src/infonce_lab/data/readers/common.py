"""What every reader shares: the table entry (:class:`Reader`) and the checks of a published
layout (missing files listed at once, label ranges, channel planes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from infonce_lab.data.archives import Archive
from infonce_lab.data.splits import LabelledSplits


@dataclass(frozen=True)
class Reader:
    """How one dataset kind gets into memory: ``read(cfg, downloads)`` takes the dataset's params
    section (params.data) and the folder archives are fetched into (``data/downloads``), and
    returns its splits; ``archives``: the publisher's, pinned (none: the kind is never fetched —
    shipped in a package, or read from the user's own copy)."""

    read: Callable[[Any, Path], LabelledSplits]
    archives: tuple[Archive, ...] = ()


HOW = "Run the download stage, or extract {archive} from {url} into {root}."


def require(paths: Iterable[Path], what: str, how: str) -> None:
    """Raise one FileNotFoundError listing every missing path, so a user fixes them all at once."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"{what}: missing {len(missing)} file(s):\n  "
                                + "\n  ".join(missing) + f"\n{how}")


def planes_to_chw(data: np.ndarray, channels: int, size: int) -> np.ndarray:
    """Rows of ``channels`` row-major planes (CIFAR, ImageNet-32: R plane, G plane, B plane) →
    (n, C, H, W). A reshape suffices: plane order is channel-first already."""
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != channels * size * size:
        raise ValueError(f"expected uint8 (n, {channels * size * size}) rows, got {data.dtype} "
                         f"{data.shape}")
    return data.reshape(-1, channels, size, size)


def labels_from(values: Any, first: int, n_classes: int, where: object) -> np.ndarray:
    """Labels numbered from ``first`` → int64 numbered from 0, range-checked."""
    y = np.asarray(values).astype(np.int64) - first
    if y.ndim != 1 or (len(y) and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"{where}: labels are not {first}..{first + n_classes - 1}")
    return y
