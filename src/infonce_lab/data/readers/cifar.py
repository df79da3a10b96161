"""CIFAR-10 and CIFAR-100 (WEINCE §4.1) from their python versions: Python-2 pickles of uint8
channel planes (``cifar-10-batches-py``, ``cifar-100-python``), read without running any code a
pickle could carry."""

from __future__ import annotations

import codecs
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from infonce_lab.data.archives import Archive, fetched
from infonce_lab.data.readers.common import HOW, Reader, labels_from, planes_to_chw, require
from infonce_lab.data.splits import ImageSplits

# The publisher's archive over https with its size, MD5 and, where one is on public record
# independently of us, SHA-256 — pins we could not check against the files here (these machines
# do not reach the hosts): a wrong one fails the download with both digests printed, it never
# accepts a wrong file. MD5s: torchvision 0.29.1 (datasets/cifar.py) and the CIFAR page; SHA-256s:
# Keras' cifar10/cifar100 loaders and torchvision's prototype datasets, each agreeing with others.
CIFAR10_ARCHIVES = (Archive(
    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cifar-10-python.tar.gz",
    md5="c58f30108f718f92721af3b95e74349a", size=170_498_071,
    sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"),)
CIFAR100_ARCHIVES = (Archive(
    "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz", "cifar-100-python.tar.gz",
    md5="eb9058c3a382ffc7106e4002c42a8d85", size=169_001_437,
    sha256="85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"),)


# The CIFAR pickles hold only dicts, lists, bytes, ints and numpy arrays. Anything else in a file
# from the internet is refused: a pickle can otherwise run arbitrary code when loaded.
_RECONSTRUCT = np.ndarray.__reduce__(np.empty(0))[0]
_PICKLE_GLOBALS: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,   # what the published files name
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,  # what NumPy ≥ 2 writes
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): codecs.encode,                      # Python 3's way to pickle bytes
}


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _PICKLE_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data pickle") \
                from None


def load_data_pickle(path: Path) -> dict[str, Any]:
    """Load a CIFAR-style pickle (written by Python 2) with bytes keys decoded to str."""
    # encoding="bytes": Python 2 str objects (the keys, the array buffers) must stay raw bytes.
    with open(path, "rb") as fh:
        obj = _ArrayUnpickler(fh, encoding="bytes").load()
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: expected a pickled dict, got {type(obj).__name__}")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}


def _names(values: Sequence[bytes | str]) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def _read_cifar_batches(paths: Sequence[Path], label_key: str,
                        n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for path in paths:
        batch = load_data_pickle(path)
        x = planes_to_chw(np.asarray(batch["data"]), 3, 32)
        y = labels_from(batch[label_key], 0, n_classes, path)
        if len(x) != len(y):
            raise ValueError(f"{path}: {len(x)} images but {len(y)} labels")
        xs.append(x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


def read_cifar10(root: str | Path) -> ImageSplits:
    """CIFAR-10 from ``root/cifar-10-batches-py`` (50,000 train + 10,000 test, 3×32×32)."""
    folder = Path(root) / "cifar-10-batches-py"
    train = [folder / f"data_batch_{i}" for i in range(1, 6)]
    test, meta = folder / "test_batch", folder / "batches.meta"
    require([*train, test, meta], "CIFAR-10", HOW.format(
        archive=CIFAR10_ARCHIVES[0].filename, url=CIFAR10_ARCHIVES[0].url, root=root))
    classes = _names(load_data_pickle(meta)["label_names"])
    train_x, train_y = _read_cifar_batches(train, "labels", len(classes))
    test_x, test_y = _read_cifar_batches([test], "labels", len(classes))
    return ImageSplits(train_x, train_y, test_x, test_y, classes,
                       source=f"CIFAR-10 python version ({CIFAR10_ARCHIVES[0].url})")


def read_cifar100(root: str | Path) -> ImageSplits:
    """CIFAR-100 from ``root/cifar-100-python`` with the 100 fine labels (the coarse 20 are unused)."""
    folder = Path(root) / "cifar-100-python"
    train, test, meta = folder / "train", folder / "test", folder / "meta"
    require([train, test, meta], "CIFAR-100", HOW.format(
        archive=CIFAR100_ARCHIVES[0].filename, url=CIFAR100_ARCHIVES[0].url, root=root))
    classes = _names(load_data_pickle(meta)["fine_label_names"])
    train_x, train_y = _read_cifar_batches([train], "fine_labels", len(classes))
    test_x, test_y = _read_cifar_batches([test], "fine_labels", len(classes))
    return ImageSplits(train_x, train_y, test_x, test_y, classes,
                       source=f"CIFAR-100 python version, fine labels ({CIFAR100_ARCHIVES[0].url})")


CIFAR10 = Reader(lambda cfg, downloads: read_cifar10(fetched(cfg, CIFAR10_ARCHIVES, downloads)),
                 CIFAR10_ARCHIVES)
CIFAR100 = Reader(lambda cfg, downloads: read_cifar100(fetched(cfg, CIFAR100_ARCHIVES, downloads)),
                  CIFAR100_ARCHIVES)
