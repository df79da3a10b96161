"""STL-10 (WEINCE §4.1) from its binary version (``stl10_binary``): column-major uint8 images,
1-based labels, and the 100,000 unlabeled images, memory-mapped and read only when asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from infonce_lab.data.archives import Archive, fetched
from infonce_lab.data.readers.common import HOW, Reader, labels_from, require
from infonce_lab.data.splits import ImageSplits

# The publisher's archive over https with its size, MD5 and, where one is on public record
# independently of us, SHA-256 — pins we could not check against the files here (these machines
# do not reach the hosts): a wrong one fails the download with both digests printed, it never
# accepts a wrong file. MD5: torchvision 0.29.1 (datasets/stl10.py); SHA-256: MLDatasets.jl and batchup.
STL10_ARCHIVES = (Archive(
    "https://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz", "stl10_binary.tar.gz",
    md5="91f7769df0f17e558f3565bffb0c7dfb", size=2_640_397_119,
    sha256="f31fd99273a1acb8609c8db427cebb1de3f71de77758cdc0e22956e1289b9866"),)


STL10_SIZE = 96
_STL10_IMAGE_BYTES = 3 * STL10_SIZE * STL10_SIZE


def stl10_images(raw: np.ndarray) -> np.ndarray:
    """STL-10's flat uint8 buffer → (n, 3, 96, 96) view.

    Each channel is stored column-major (MATLAB order), so after the reshape the last two axes are
    (W, H) and must be swapped, exactly as torchvision's ``STL10.__loadfile`` does. The result is a
    view: a memory-mapped buffer stays on disk until its pixels are used.
    """
    if raw.size % _STL10_IMAGE_BYTES:
        raise ValueError(f"{raw.size} bytes is not a whole number of 3×96×96 images")
    return raw.reshape(-1, 3, STL10_SIZE, STL10_SIZE).transpose(0, 1, 3, 2)


def _read_stl10_labelled(folder: Path, split: str, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    x_path, y_path = folder / f"{split}_X.bin", folder / f"{split}_y.bin"
    x = np.ascontiguousarray(stl10_images(np.fromfile(x_path, dtype=np.uint8)))
    y = labels_from(np.fromfile(y_path, dtype=np.uint8), 1, n_classes, y_path)
    if len(x) != len(y):
        raise ValueError(f"{x_path}: {len(x)} images but {y_path} has {len(y)} labels")
    return x, y


def read_stl10(root: str | Path, with_unlabeled: bool = False) -> ImageSplits:
    """STL-10 from ``root/stl10_binary`` (5,000 train + 8,000 test labelled, 3×96×96).

    With ``with_unlabeled`` the 100,000 unlabeled images (2.76 GB) come as a read-only memory map
    of ``unlabeled_X.bin``: nothing is read until used, and writing it out streams in chunks.
    The 10 predefined folds of the train split are not read.
    """
    folder = Path(root) / "stl10_binary"
    names = ["train_X.bin", "train_y.bin", "test_X.bin", "test_y.bin", "class_names.txt"]
    names += ["unlabeled_X.bin"] if with_unlabeled else []
    spec = STL10_ARCHIVES[0]
    require([folder / n for n in names], "STL-10", HOW.format(
        archive=spec.filename, url=spec.url, root=root))
    classes = [ln.strip() for ln in (folder / "class_names.txt").read_text().splitlines()
               if ln.strip()]
    train_x, train_y = _read_stl10_labelled(folder, "train", len(classes))
    test_x, test_y = _read_stl10_labelled(folder, "test", len(classes))
    unlabeled = None
    if with_unlabeled:
        unlabeled = stl10_images(np.memmap(folder / "unlabeled_X.bin", dtype=np.uint8, mode="r"))
    return ImageSplits(train_x, train_y, test_x, test_y, classes,
                       source=f"STL-10 binary version ({spec.url})", unlabeled_x=unlabeled)


STL10 = Reader(lambda cfg, downloads: read_stl10(fetched(cfg, STL10_ARCHIVES, downloads),
                                                 with_unlabeled=cfg.with_unlabeled),
               STL10_ARCHIVES)
