"""A DDP rank's share of a global batch gets exactly the views one process makes of that batch.

Every rank's generator is in the same state (same seed, same epoch orders), so a rank drawing
augmentations for its own rows alone would hand its k-th image rank 0's k-th crop, rotation and
noise: the ranks' views would be copies of each other's draws. Here each share is compared
with the one-process views of the whole batch, for both augmentation families."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infonce_lab.data.batch_part import BatchPart
from infonce_lab.params import DigitsAugment, SimCLRAugmentConfig
from infonce_lab.train.image_source import ImageViews

AUGMENTS = {
    # every random op of the digits' pipeline on, cutout and noise included
    "digits": (DigitsAugment(contrast=0.3, brightness=0.2, noise_std=0.05, erase_prob=0.5),
               (64, 1, 8, 8)),
    "simclr": (SimCLRAugmentConfig(size=16, blur_p=0.5), (64, 3, 20, 20)),
}


def _images(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize("name", sorted(AUGMENTS))
@pytest.mark.parametrize("world", [2, 4])
def test_each_rank_gets_its_rows_of_the_one_process_views(name: str, world: int) -> None:
    augment, shape = AUGMENTS[name]
    x, batch = _images(shape), 32
    cpu = torch.device("cpu")
    one = ImageViews(x, augment, cpu, seed=3)
    ranks = [ImageViews(x, augment, cpu, seed=3) for _ in range(world)]
    local = batch // world
    for _ in range(2):                         # two steps: the streams stay in step
        perm = one.order()
        assert all(torch.equal(r.order(), perm) for r in ranks)
        idx = perm[:batch]
        whole = one.inputs(idx, BatchPart(0, batch))
        v1, v2 = whole.chunk(2)
        for r, src in enumerate(ranks):
            share = src.inputs(idx[r * local:(r + 1) * local], BatchPart(r * local, batch))
            s1, s2 = share.chunk(2)
            assert torch.equal(s1, v1[r * local:(r + 1) * local])
            assert torch.equal(s2, v2[r * local:(r + 1) * local])
    # the failure this prevents: the same images on two ranks come out as copies when each
    # rank draws for its own rows, and differently when each takes its rows of the batch's draws
    fresh = [ImageViews(x, augment, cpu, seed=3) for _ in range(4)]
    idx = [f.order() for f in fresh][0][:local]
    assert torch.equal(fresh[0].inputs(idx), fresh[1].inputs(idx))
    assert not torch.equal(fresh[2].inputs(idx, BatchPart(0, batch)),
                           fresh[3].inputs(idx, BatchPart(local, batch)))


@pytest.mark.parametrize("name", sorted(AUGMENTS))
def test_a_whole_batch_part_is_the_plain_views(name: str) -> None:
    augment, shape = AUGMENTS[name]
    x = _images(shape)
    a, b = ImageViews(x, augment, torch.device("cpu"), 5), ImageViews(x, augment,
                                                                      torch.device("cpu"), 5)
    idx = a.order()[:16]
    b.order()
    assert torch.equal(a.inputs(idx), b.inputs(idx, BatchPart(0, 16)))


def test_rows_outside_the_batch_are_refused() -> None:
    with pytest.raises(ValueError, match="not in a batch of 8"):
        BatchPart(6, 8).rows(4)
