"""Synthetic archives in the paper datasets' exact published formats, for the paper-scale
rehearsal (test_paper_rehearsal.py).

Each writer lays out the files as the publisher's archive does — CIFAR-10/100's Python-2
pickles (protocol 2, ``numpy.core`` names, bytes keys), STL-10's column-major binaries with
1-based labels and the unlabeled split, Tiny-ImageNet's zip of JPEG folders with
``val_annotations.txt``, SimCSE's one-sentence-a-line ``wiki1m_for_simcse.txt`` and
sentence-transformers' gzipped STS-B TSV — and returns what a correct reader must give back
(uint8 (n, C, H, W) images in file order, 0-based labels), so the test can compare the download
stage's output with it bit for bit.

Images are a class colour plus noise, so that training has something to learn; labels use a
few classes spread over each dataset's whole label range (the first and the last included), so
an off-by-one in a reader's label handling shows.
"""

from __future__ import annotations

import csv
import gzip
import io
import pickle
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class Split:
    x: np.ndarray  # uint8 (n, 3, H, W), in the order a reader must return them
    y: np.ndarray  # int64 (n,), 0-based; -1 for unlabeled images


@dataclass(frozen=True)
class Written:
    """One synthesised archive: its file in the served folder and the splits inside it."""

    filename: str
    splits: dict[str, Split]  # "train", "test" (and "unlabeled")


def _labels(n: int, classes: list[int], rng: np.random.Generator) -> np.ndarray:
    """``n`` labels, as many of each of ``classes`` as divide evenly, shuffled."""
    y = np.resize(np.asarray(classes, dtype=np.int64), n)
    return y[rng.permutation(n)]


def _images(y: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """A colour per class (from the label) plus uniform noise of ±40 grey levels."""
    colour = (np.stack([y * 37, y * 91 + 40, 255 - y * 53]) % 256).T  # (n, 3)
    noise = rng.integers(-40, 41, size=(len(y), 3, size, size))
    return np.clip(colour[:, :, None, None] + noise, 0, 255).astype(np.uint8)


def _split(n: int, classes: list[int], size: int, rng: np.random.Generator) -> Split:
    y = _labels(n, classes, rng)
    return Split(_images(y, size, rng), y)


def _py2_pickle(obj: object) -> bytes:
    """As the published CIFAR files: protocol 2, arrays named through ``numpy.core``."""
    return pickle.dumps(obj, protocol=2).replace(b"numpy._core.multiarray",
                                                 b"numpy.core.multiarray")


def _cifar_rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(len(x), -1)  # (n, 3072): R plane, G plane, B plane, each row-major


def _tar_gz(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for folder in sorted({name.rsplit("/", 1)[0] for name in files}):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


# ------------------------------------------------------------------------------------ CIFAR
CIFAR10_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                 "truck"]


def cifar10(out: Path, n_train: int, n_test: int, classes: list[int],
            rng: np.random.Generator) -> Written:
    """``cifar-10-python.tar.gz``: five training batches and a test batch of pickled dicts."""
    train, test = _split(n_train, classes, 32, rng), _split(n_test, classes, 32, rng)
    files: dict[str, bytes] = {}
    for i, part in enumerate(np.array_split(np.arange(n_train), 5), 1):
        files[f"cifar-10-batches-py/data_batch_{i}"] = _py2_pickle({
            b"batch_label": f"training batch {i} of 5".encode(),
            b"labels": [int(v) for v in train.y[part]],
            b"data": _cifar_rows(train.x[part]),
            b"filenames": [f"img_{j}.png".encode() for j in part]})
    files["cifar-10-batches-py/test_batch"] = _py2_pickle({
        b"batch_label": b"testing batch 1 of 1", b"labels": [int(v) for v in test.y],
        b"data": _cifar_rows(test.x), b"filenames": [b"test.png"] * n_test})
    files["cifar-10-batches-py/batches.meta"] = _py2_pickle({
        b"num_cases_per_batch": 10000, b"label_names": [n.encode() for n in CIFAR10_NAMES],
        b"num_vis": 3072})
    files["cifar-10-batches-py/readme.html"] = b"<meta HTTP-EQUIV=\"REFRESH\" content=\"0\">\n"
    _tar_gz(out / "cifar-10-python.tar.gz", files)
    return Written("cifar-10-python.tar.gz", {"train": train, "test": test})


def cifar100(out: Path, n_train: int, n_test: int, classes: list[int],
             rng: np.random.Generator) -> Written:
    """``cifar-100-python.tar.gz``: one train and one test pickle with fine and coarse labels,
    and ``meta`` naming the 100 fine and 20 coarse classes."""
    train, test = _split(n_train, classes, 32, rng), _split(n_test, classes, 32, rng)

    def batch(name: str, s: Split) -> bytes:
        return _py2_pickle({b"filenames": [b"x.png"] * len(s.y), b"batch_label": name.encode(),
                            b"fine_labels": [int(v) for v in s.y],
                            b"coarse_labels": [int(v) // 5 for v in s.y],
                            b"data": _cifar_rows(s.x)})

    files = {
        "cifar-100-python/train": batch("training batch 1 of 1", train),
        "cifar-100-python/test": batch("testing batch 1 of 1", test),
        "cifar-100-python/meta": _py2_pickle({
            b"fine_label_names": [f"fine_{i:02d}".encode() for i in range(100)],
            b"coarse_label_names": [f"coarse_{i:02d}".encode() for i in range(20)]}),
        "cifar-100-python/file.txt~": b"",
    }
    _tar_gz(out / "cifar-100-python.tar.gz", files)
    return Written("cifar-100-python.tar.gz", {"train": train, "test": test})


# ----------------------------------------------------------------------------------- STL-10
STL10_NAMES = ["airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"]


def stl10(out: Path, n_train: int, n_test: int, n_unlabeled: int, classes: list[int],
          rng: np.random.Generator) -> Written:
    """``stl10_binary.tar.gz``: each image's channels stored column-major (MATLAB order),
    labels 1-based uint8, the unlabeled split, the class names and the 10 folds."""
    train, test = _split(n_train, classes, 96, rng), _split(n_test, classes, 96, rng)
    unlabeled = Split(_images(rng.integers(0, 10, n_unlabeled), 96, rng),
                      np.full(n_unlabeled, -1, dtype=np.int64))

    def column_major(x: np.ndarray) -> bytes:
        return np.ascontiguousarray(x.transpose(0, 1, 3, 2)).tobytes()

    files = {
        "stl10_binary/train_X.bin": column_major(train.x),
        "stl10_binary/train_y.bin": (train.y + 1).astype(np.uint8).tobytes(),
        "stl10_binary/test_X.bin": column_major(test.x),
        "stl10_binary/test_y.bin": (test.y + 1).astype(np.uint8).tobytes(),
        "stl10_binary/unlabeled_X.bin": column_major(unlabeled.x),
        "stl10_binary/class_names.txt": "".join(f"{n}\n" for n in STL10_NAMES).encode(),
        "stl10_binary/fold_indices.txt": "".join(
            " ".join(str(i) for i in range(f, n_train, 10)) + " \n" for f in range(10)).encode(),
    }
    _tar_gz(out / "stl10_binary.tar.gz", files)
    return Written("stl10_binary.tar.gz",
                   {"train": train, "test": test, "unlabeled": unlabeled})


# ---------------------------------------------------------------------------- Tiny-ImageNet
def _jpeg(x: np.ndarray) -> bytes:
    """One (3, H, W) image as a JPEG at quality 100 (still lossy: see :func:`tiny_imagenet`)."""
    buf = io.BytesIO()
    Image.fromarray(x.transpose(1, 2, 0)).save(buf, format="JPEG", quality=100)
    return buf.getvalue()


def _decoded(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB")).transpose(2, 0, 1)


def tiny_imagenet(out: Path, per_class_train: int, n_val: int, n_classes: int,
                  rng: np.random.Generator) -> Written:
    """``tiny-imagenet-200.zip``: ``train/<wnid>/images/<wnid>_<i>.JPEG`` with the boxes files,
    ``val/images`` labelled by ``val_annotations.txt``, an unlabelled ``test/images``,
    ``wnids.txt`` (not sorted, as published) and ``words.txt``. The expected images are the
    JPEGs as decoded, since JPEG is lossy."""
    wnids = [f"n0{int(v):07d}" for v in rng.choice(10**7, n_classes, replace=False)]
    files: dict[str, bytes] = {
        "tiny-imagenet-200/wnids.txt": "".join(f"{w}\n" for w in wnids).encode(),
        "tiny-imagenet-200/words.txt": ("n00001740\tentity\n" + "".join(
            f"{w}\tclass {i}, synonym {i}\n" for i, w in enumerate(wnids))).encode(),
    }
    train_x, train_y = [], []
    for c, wnid in enumerate(wnids):
        x = _images(np.full(per_class_train, c), 64, rng)
        names = [f"{wnid}_{i}.JPEG" for i in range(per_class_train)]
        for name, image in zip(names, x, strict=True):
            files[f"tiny-imagenet-200/train/{wnid}/images/{name}"] = _jpeg(image)
        files[f"tiny-imagenet-200/train/{wnid}/{wnid}_boxes.txt"] = "".join(
            f"{name}\t0\t0\t63\t63\n" for name in names).encode()
        # a class's files in name order, as the published ones are read (…_10 before …_2)
        train_x += [_decoded(files[f"tiny-imagenet-200/train/{wnid}/images/{name}"])
                    for name in sorted(names)]
        train_y += [c] * per_class_train
    val_y = _labels(n_val, list(range(n_classes)), rng)
    val_x, annotations = [], []
    for i, c in enumerate(val_y):
        data = _jpeg(_images(np.asarray([c]), 64, rng)[0])
        files[f"tiny-imagenet-200/val/images/val_{i}.JPEG"] = data
        val_x.append(_decoded(data))
        annotations.append(f"val_{i}.JPEG\t{wnids[c]}\t0\t0\t63\t63\n")
    files["tiny-imagenet-200/val/val_annotations.txt"] = "".join(annotations).encode()
    for i in range(4):  # the official test set: no labels, never read
        files[f"tiny-imagenet-200/test/images/test_{i}.JPEG"] = _jpeg(
            _images(np.asarray([0]), 64, rng)[0])
    with zipfile.ZipFile(out / "tiny-imagenet-200.zip", "w", zipfile.ZIP_STORED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return Written("tiny-imagenet-200.zip", {
        "train": Split(np.stack(train_x), np.asarray(train_y, dtype=np.int64)),
        "test": Split(np.stack(val_x), val_y)})


# ------------------------------------------------------------------------------------ text
_SUBJECTS = ["The river", "A small town", "The old castle", "Her first novel", "The committee",
             "This species", "The railway line", "His brother", "The album", "The university"]
_VERBS = ["was built in", "lies near", "was described in", "moved to", "was renamed in",
          "is found in", "opened in", "was released in"]
_PLACES = ["the north of the county", "1887", "the valley", "a later edition", "the capital",
           "southern Europe", "the spring of 1923", "the coastal plain"]


def simcse_wiki(out: Path, n: int, rng: np.random.Generator) -> tuple[str, int]:
    """``wiki1m_for_simcse.txt``: one sentence a line, UTF-8 (a few non-ASCII letters, as
    Wikipedia has), a repeated line kept as SimCSE keeps it."""
    lines = [f"{_SUBJECTS[rng.integers(10)]} {_VERBS[rng.integers(8)]} "
             f"{_PLACES[rng.integers(8)]}, according to source {i} (Zürich, café)."
             for i in range(n - 1)]
    lines.append(lines[0])
    (out / "wiki1m_for_simcse.txt").write_text("".join(f"{s}\n" for s in lines),
                                               encoding="utf-8")
    return "wiki1m_for_simcse.txt", n


STSB_HEADER = ["split", "genre", "dataset", "year", "sid", "score", "sentence1", "sentence2"]


def stsb(out: Path, per_split: dict[str, int], rng: np.random.Generator) -> tuple[str, dict]:
    """``stsbenchmark.tsv.gz``: sentence-transformers' gzipped TSV (a header, no quoting: a
    sentence may hold a bare quote), scores in [0, 5] with three decimals."""
    rows = []
    for split, n in per_split.items():
        for i in range(n):
            a = f"{_SUBJECTS[i % 10]} {_VERBS[i % 8]} {_PLACES[(i * 3) % 8]}."
            b = f"{_SUBJECTS[(i + i // 10) % 10]} {_VERBS[(i + 1) % 8]} \"{_PLACES[i % 8]}\"."
            rows.append([split, "main-news", "headlines", "2015", f"{i:04d}",
                         f"{rng.uniform(0, 5):.3f}", a, b])
    with gzip.open(out / "stsbenchmark.tsv.gz", "wt", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n",
                            escapechar=None, quotechar=None)
        writer.writerow(STSB_HEADER)
        writer.writerows(rows)
    return "stsbenchmark.tsv.gz", dict(per_split)
