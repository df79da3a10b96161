from __future__ import annotations

import torch

from infonce_lab.data.augment import augment_batch
from infonce_lab.data.views import make_views
from infonce_lab.params import DigitsAugment

OFF = DigitsAugment(rotate_deg=0, scale=0, shear_deg=0, translate_px=0, contrast=0,
                    brightness=0, noise_std=0, erase_prob=0)


def _batch(n: int = 16) -> torch.Tensor:
    return torch.rand(n, 1, 8, 8, generator=torch.Generator().manual_seed(0))


def test_all_magnitudes_zero_is_identity():
    x = _batch()
    out = augment_batch(x, OFF, torch.Generator().manual_seed(1))
    assert torch.allclose(out, x, atol=1e-5)


def test_pure_translation_by_whole_pixels_shifts_the_image():
    # translate_px bounds the shift; build a deterministic one-pixel shift through the matrices.
    from infonce_lab.data.augment import random_affine_matrices

    theta = random_affine_matrices(4, 8, OFF, torch.Generator().manual_seed(0), torch.device("cpu"))
    assert torch.allclose(theta, torch.tensor([[1.0, 0, 0], [0, 1.0, 0]]).expand(4, 2, 3))


def test_reproducible_from_the_generator_and_different_across_seeds():
    x, cfg = _batch(), DigitsAugment()
    a1, a2 = make_views(x, cfg, torch.Generator().manual_seed(5))
    b1, b2 = make_views(x, cfg, torch.Generator().manual_seed(5))
    c1, _ = make_views(x, cfg, torch.Generator().manual_seed(6))
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    assert not torch.equal(a1, c1)
    assert not torch.equal(a1, a2)


def test_each_image_gets_its_own_parameters():
    x = _batch(1).expand(8, 1, 8, 8).contiguous()
    out = augment_batch(x, DigitsAugment(noise_std=0, erase_prob=0), torch.Generator().manual_seed(2))
    flat = out.flatten(1)
    assert torch.cdist(flat, flat).triu(1).gt(1e-4).sum() == 8 * 7 // 2


def test_range_and_shape():
    x = _batch()
    out = augment_batch(x, DigitsAugment(contrast=0.9, brightness=1.0, noise_std=1.0),
                        torch.Generator().manual_seed(3))
    assert out.shape == x.shape and out.min() >= 0 and out.max() <= 1


def test_erasing_zeroes_a_square():
    x = torch.ones(32, 1, 8, 8)
    cfg = OFF.model_copy(update={"erase_prob": 1.0, "erase_size_px": 3})
    out = augment_batch(x, cfg, torch.Generator().manual_seed(4))
    assert torch.all((out == 0).flatten(1).sum(1) == 9)
