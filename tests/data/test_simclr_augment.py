"""The batched SimCLR augmentation against torchvision: op by op with the same parameters, and in
distribution against torchvision's own per-image pipeline (two-sample KS tests), with negative
controls showing that the same statistics catch a wrong setting."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as TF
from scipy.stats import ks_2samp

import infonce_lab.data.simclr_augment as simclr_augment_module
from infonce_lab.data.simclr_augment import (
    BRIGHTNESS,
    CONTRAST,
    HUE,
    SATURATION,
    SimCLRAugment,
    SimCLRParams,
    apply_params,
    color_jitter_,
    gaussian_blur,
    resized_crop,
    rgb_to_grayscale,
    sample_crop_boxes,
    sample_params,
    simclr_augment,
    to_float,
)

CPU = torch.device("cpu")
# Same parameters, float32 both sides: the measured gaps are ≤ 1.3e-6 (hue, whose closed form
# differs from torchvision's HSV round trip) and ≤ 3.6e-6 (plain bilinear, source coordinate
# rounding); everything else ≤ 4e-7. 1e-5 leaves room for other CPUs' vectorisation.
ATOL = 1e-5
N_DRAWS = 2000
# Family-wise level of each battery of KS tests, split Bonferroni-style over its statistics.
ALPHA = 0.01
MEAN_SE = 4.0  # means must agree within this many standard errors of their difference


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _images(n: int, c: int = 3, h: int = 32, w: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, c, h, w, generator=_gen(seed))


def structured_image(size: int = 32) -> torch.Tensor:
    """(3, size, size): smooth gradients plus saturated blocks of four hues, so crops, jitter and
    greyscale all move the summary statistics."""
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    img = torch.stack([xx, yy, 1.0 - 0.5 * (xx + yy)])
    q = size // 2
    blocks = {(0, 1): (0.9, 0.15, 0.1), (1, 0): (0.1, 0.7, 0.2), (1, 1): (0.95, 0.85, 0.1)}
    for (r, c), rgb in blocks.items():
        img[:, r * q : (r + 1) * q, c * q : (c + 1) * q] = torch.tensor(rgb).view(3, 1, 1)
    img[:, q - 4 : q + 4, q - 4 : q + 4] = torch.tensor([0.2, 0.3, 0.9]).view(3, 1, 1)
    return img


@pytest.fixture(autouse=True)
def _one_thread(_two_threads: None) -> Iterator[None]:
    """One intra-op thread for this module (after conftest's two).

    Half of these tests loop torchvision over single 32 px images, ~10× slower with intra-op
    threads, and the batched ops are memory-bound: on a shared 2-core box, OpenMP barrier waits
    made two threads 3–9× slower than one.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ------------------------------------------------------------------------- ops, same parameters
FACTORS = torch.tensor([0.2, 0.55, 1.0, 1.3, 1.8, 0.9])
SHIFTS = torch.tensor([-0.2, -0.07, 0.0, 0.11, 0.2, 0.5])


def _one_op(op: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The jitter's own path (``color_jitter_``) with only ``op`` acting: every other factor is
    1, which leaves an image exactly as it is, and the hue pass runs only for the hue."""
    def run(x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        factors = torch.ones(len(x), 4)
        factors[:, HUE] = 0.0
        factors[:, op] = values
        order = torch.tensor([op, *(k for k in range(4) if k != op)]).repeat(len(x), 1)
        return color_jitter_(x.clone(), factors, order, torch.ones(len(x), dtype=torch.bool),
                             hue=op == HUE)
    return run


@pytest.mark.parametrize(
    ("op", "theirs", "values"),
    [
        (BRIGHTNESS, TF.adjust_brightness, FACTORS),
        (CONTRAST, TF.adjust_contrast, FACTORS),
        (SATURATION, TF.adjust_saturation, FACTORS),
        (HUE, TF.adjust_hue, SHIFTS),
    ],
    ids=["brightness", "contrast", "saturation", "hue"],
)
@pytest.mark.parametrize("channels", [3, 1])
def test_jitter_ops_match_torchvision(
    op: int,
    theirs: Callable[..., torch.Tensor],
    values: torch.Tensor,
    channels: int,
) -> None:
    x = _images(len(values), c=channels)
    # A coarse grid adds grey pixels and ties between channels, the HSV edge cases.
    x[:, :, :8] = (x[:, :, :8] * 4).round() / 4
    expected = torch.stack([theirs(img, float(v)) for img, v in zip(x, values, strict=True)])
    assert (_one_op(op)(x, values) - expected).abs().max() <= ATOL


def test_grayscale_matches_torchvision() -> None:
    x = _images(4)
    expected = TF.rgb_to_grayscale(x, num_output_channels=3)
    assert (rgb_to_grayscale(x).expand_as(x) - expected).abs().max() <= ATOL


@pytest.mark.parametrize(
    ("in_hw", "size", "antialias"),
    [
        ((32, 32), 32, False),  # the paper's case: upsampling only
        ((32, 32), 32, True),
        ((30, 44), 32, True),  # non-square input
        ((96, 96), 64, True),  # downsampling: antialias matters
        ((96, 96), 64, False),
        ((24, 24), 40, True),
    ],
)
def test_resized_crop_and_flip_match_torchvision(
    in_hw: tuple[int, int], size: int, antialias: bool
) -> None:
    n = 48
    x = _images(n, h=in_hw[0], w=in_hw[1])
    gen = _gen(1)
    top, left, h, w = sample_crop_boxes(n, *in_hw, (0.08, 1.0), (3 / 4, 4 / 3), gen, CPU)
    flip = torch.rand(n, generator=gen) < 0.5
    ours = resized_crop(x, top, left, h, w, size, antialias, flip)
    expected = []
    for i in range(n):
        box = dict(top=int(top[i]), left=int(left[i]), height=int(h[i]), width=int(w[i]))
        img = TF.resized_crop(x[i], **box, size=[size, size], antialias=antialias)
        expected.append(TF.horizontal_flip(img) if flip[i] else img)
    assert (ours - torch.stack(expected)).abs().max() <= ATOL


def test_blur_matches_torchvision() -> None:
    x = _images(5, h=40, w=40)
    sigma = torch.tensor([0.1, 0.5, 1.0, 1.6, 2.0])
    expected = torch.stack(
        [TF.gaussian_blur(img, [9, 9], [float(s)] * 2) for img, s in zip(x, sigma, strict=True)]
    )
    assert (gaussian_blur(x, sigma, 9) - expected).abs().max() <= ATOL


def test_blur_kernel_is_ten_percent_of_the_size_and_odd() -> None:
    assert [SimCLRAugment(s).blur_kernel_size for s in (32, 64, 96, 224)] == [3, 7, 9, 23]


def _torchvision_with_params(x: torch.Tensor, p: SimCLRParams, cfg: SimCLRAugment) -> torch.Tensor:
    """The pipeline as torchvision's functional ops, image by image, with our parameters."""
    ops = [TF.adjust_brightness, TF.adjust_contrast, TF.adjust_saturation, TF.adjust_hue]
    out = []
    for i, img in enumerate(x):
        box = dict(
            top=int(p.top[i]), left=int(p.left[i]), height=int(p.height[i]), width=int(p.width[i])
        )
        y = TF.resized_crop(img, **box, size=[cfg.size, cfg.size], antialias=cfg.antialias)
        if p.flip[i]:
            y = TF.horizontal_flip(y)
        if p.jitter[i]:
            for k in p.order[i].tolist():
                y = ops[k](y, float(p.factors[i, k]))
        if p.gray[i]:
            y = TF.rgb_to_grayscale(y, num_output_channels=y.shape[0])
        if p.blur[i]:
            k = cfg.blur_kernel_size
            y = TF.gaussian_blur(y, [k, k], [float(p.sigma[i])] * 2)
        out.append(y)
    return torch.stack(out)


@pytest.mark.parametrize(("channels", "size", "blur_p"), [(3, 32, 0.0), (1, 32, 0.0), (3, 48, 0.5)])
def test_whole_pipeline_matches_torchvision_with_the_same_parameters(
    channels: int, size: int, blur_p: float
) -> None:
    n = 64
    x = _images(n, c=channels, h=size, w=size, seed=3)
    cfg = SimCLRAugment(size, blur_p=blur_p)
    p = sample_params(n, size, size, cfg, _gen(4), CPU)
    assert p.jitter.any() and p.gray.any() and p.flip.any()
    assert (apply_params(x, p, cfg) - _torchvision_with_params(x, p, cfg)).abs().max() <= ATOL


def test_color_jitter_order_is_a_per_image_permutation() -> None:
    p = sample_params(4000, 32, 32, SimCLRAugment(32), _gen(5), CPU)
    assert torch.equal(p.order.sort(dim=1).values, torch.arange(4).expand(4000, 4))
    # All 24 orders occur, each about 1/24 of the time.
    codes = (p.order * torch.tensor([64, 16, 4, 1])).sum(1)
    counts = torch.unique(codes, return_counts=True)[1]
    assert len(counts) == 24 and counts.min() > 100


def test_color_jitter_leaves_unselected_images_untouched() -> None:
    x = _images(16)
    p = sample_params(16, 32, 32, SimCLRAugment(32, jitter_p=0.5), _gen(6), CPU)
    out = color_jitter_(x.clone(), p.factors, p.order, p.jitter)
    assert torch.equal(out[~p.jitter], x[~p.jitter])
    assert (out[p.jitter] - x[p.jitter]).abs().amax(dim=(1, 2, 3)).min() > 1e-3


# ------------------------------------------------------------------------------ crop sampling
def test_crop_boxes_follow_torchvision_in_distribution() -> None:
    n, size = N_DRAWS, 32
    top, left, h, w = (
        t.numpy()
        for t in sample_crop_boxes(n, size, size, (0.08, 1.0), (3 / 4, 4 / 3), _gen(7), CPU)
    )
    rrc = T.RandomResizedCrop(size)
    probe = [torch.zeros(3, size, size)]
    torch.manual_seed(7)
    ref = [rrc.make_params(probe) for _ in range(n)]
    ref_area = np.array([r["height"] * r["width"] for r in ref]) / size**2
    ref_aspect = np.array([r["width"] / r["height"] for r in ref])
    ref_cx = np.array([r["left"] + r["width"] / 2 for r in ref])
    stats = {
        "area": (h * w / size**2, ref_area),
        "aspect": (w / h, ref_aspect),
        "centre_x": (left + w / 2, ref_cx),
    }
    for name, (a, b) in stats.items():
        assert ks_2samp(a, b).pvalue > ALPHA / len(stats), name
    assert (top + h <= size).all() and (left + w <= size).all() and (top >= 0).all()


def test_crop_falls_back_to_torchvisions_central_crop() -> None:
    # No (area, ratio) candidate fits: ratios of 2 to 3 need w > 32 at 90% of the area.
    rrc = T.RandomResizedCrop(32, scale=(0.9, 1.0), ratio=(2.0, 3.0))
    expected = rrc.make_params([torch.zeros(3, 32, 32)])
    boxes = sample_crop_boxes(8, 32, 32, (0.9, 1.0), (2.0, 3.0), _gen(8), CPU)
    for got, key in zip(boxes, ("top", "left", "height", "width"), strict=True):
        assert (got == expected[key]).all(), key


# ----------------------------------------------------------------- distribution vs torchvision
def _hue_sat(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """HSV hue (turns) and saturation of (N, 3, H, W) images."""
    r, g, b = x.unbind(dim=1)
    mn, mx = torch.aminmax(x, dim=1)
    c = mx - mn
    safe = torch.where(c == 0, 1.0, c)
    h6 = torch.where(
        mx == r, (g - b) / safe, torch.where(mx == g, (b - r) / safe + 2, (r - g) / safe + 4)
    )
    return (h6 / 6).remainder(1.0), c / torch.where(mx == 0, 1.0, mx)


def _full_stats(out: torch.Tensor, area: np.ndarray) -> dict[str, np.ndarray]:
    stats = {"area": area}
    for c, name in enumerate("RGB"):
        stats[f"mean_{name}"] = out[:, c].mean(dim=(1, 2)).numpy()
        stats[f"std_{name}"] = out[:, c].std(dim=(1, 2)).numpy()
    return stats


def _colour_stats(out: torch.Tensor, img: torch.Tensor) -> dict[str, np.ndarray]:
    """Statistics of colour-only views (no crop, no flip), so pixels still correspond."""
    h_in, s_in = _hue_sat(img.unsqueeze(0))
    h_out, s_out = _hue_sat(out)
    turn = 2 * math.pi * (h_out - h_in)
    w = s_in * s_out  # grey pixels carry no hue
    shift = torch.atan2((w * turn.sin()).sum((1, 2)), (w * turn.cos()).sum((1, 2))) / (2 * math.pi)
    luma = rgb_to_grayscale(out)
    return {
        "hue_shift": shift.numpy(),
        "saturation": s_out.mean(dim=(1, 2)).numpy(),
        "value": out.amax(dim=1).mean(dim=(1, 2)).numpy(),
        "luma_std": luma.std(dim=(1, 2, 3)).numpy(),
    }


COLOUR_ONLY = {"scale": (1.0, 1.0), "ratio": (1.0, 1.0), "flip_p": 0.0}


def _ours(cfg: SimCLRAugment, seed: int) -> dict[str, np.ndarray]:
    img = structured_image(cfg.size)
    batch = img.expand(N_DRAWS, -1, -1, -1)
    p = sample_params(N_DRAWS, cfg.size, cfg.size, cfg, _gen(seed), CPU)
    area = (p.height * p.width).numpy() / cfg.size**2
    stats = _full_stats(apply_params(batch, p, cfg), area)
    colour_cfg = dataclasses.replace(cfg, **COLOUR_ONLY)
    colour = simclr_augment(batch, colour_cfg, _gen(seed + 1))
    return stats | _colour_stats(colour, img)


@pytest.fixture(scope="module")
def torchvision_stats() -> dict[str, np.ndarray]:
    """torchvision's own pipeline, image by image, seeded with torch.manual_seed."""
    size = 32
    img = structured_image(size)
    rrc = T.RandomResizedCrop(size)  # antialias=True, the v2 default (no effect when upsampling)
    colour = T.Compose(
        [
            T.RandomApply([T.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8),
            T.RandomGrayscale(0.2),
        ]
    )
    full_rest = T.Compose([T.RandomHorizontalFlip(), colour])
    views, areas, colour_views = [], [], []
    threads = torch.get_num_threads()  # module scope: set up before the autouse _one_thread
    torch.set_num_threads(1)
    torch.manual_seed(11)
    try:
        for _ in range(N_DRAWS):
            box = rrc.make_params([img])  # what rrc(img) draws, kept to record the area
            areas.append(box["height"] * box["width"] / size**2)
            views.append(full_rest(TF.resized_crop(img, **box, size=[size, size])))
            colour_views.append(colour(img))
    finally:
        torch.set_num_threads(threads)
    return _full_stats(torch.stack(views), np.array(areas)) | _colour_stats(
        torch.stack(colour_views), img
    )


def _compare(
    ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]
) -> dict[str, tuple[float, float]]:
    """Per statistic: KS p-value and the mean difference in standard errors."""
    out = {}
    for name, a in ours.items():
        b = ref[name]
        se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        z = abs(a.mean() - b.mean()) / se if se > 0 else 0.0
        out[name] = (float(ks_2samp(a, b).pvalue), float(z))
    return out


def test_distribution_matches_torchvision_pipeline(
    torchvision_stats: dict[str, np.ndarray],
) -> None:
    result = _compare(_ours(SimCLRAugment(32), seed=21), torchvision_stats)
    level = ALPHA / len(result)
    failing = {k: v for k, v in result.items() if v[0] <= level or v[1] > MEAN_SE}
    assert not failing, f"(KS p, |Δmean|/SE) per statistic: {result}"


@pytest.mark.parametrize(
    "wrong",
    [
        {"jitter_p": 0.0},
        {"scale": (0.5, 1.0)},
        {"gray_p": 0.0},
        {"jitter": (0.8, 0.8, 0.8, 0.0)},  # no hue jitter
        {"jitter": (0.4, 0.4, 0.4, 0.1)},  # half-strength jitter
    ],
    ids=["no-jitter", "scale-0.5", "no-grayscale", "no-hue", "half-jitter"],
)
def test_distribution_check_detects_a_wrong_setting(
    torchvision_stats: dict[str, np.ndarray], wrong: dict[str, object]
) -> None:
    cfg = dataclasses.replace(SimCLRAugment(32), **wrong)
    result = _compare(_ours(cfg, seed=21), torchvision_stats)
    level = ALPHA / len(result)
    assert any(p <= level for p, _ in result.values()), result


# ------------------------------------------------------------------------ contract of the API
def test_augment_is_sample_then_apply() -> None:
    x = _images(8)
    cfg = SimCLRAugment(32)
    p = sample_params(8, 32, 32, cfg, _gen(9), CPU)
    assert torch.equal(simclr_augment(x, cfg, _gen(9)), apply_params(x, p, cfg))


def test_cpu_chunking_does_not_change_the_views(monkeypatch: pytest.MonkeyPatch) -> None:
    x = _images(40)
    cfg = SimCLRAugment(32, blur_p=0.5)
    whole = simclr_augment(x, cfg, _gen(15))
    monkeypatch.setattr(simclr_augment_module, "CPU_CHUNK_ELEMENTS", 7 * 3 * 32 * 32)
    assert (simclr_augment(x, cfg, _gen(15)) - whole).abs().max() <= ATOL


def test_same_generator_state_same_views_and_views_differ() -> None:
    x = _images(32)
    cfg = SimCLRAugment(32)
    g_a, g_b = _gen(10), _gen(10)
    a1, a2 = simclr_augment(x, cfg, g_a), simclr_augment(x, cfg, g_a)  # two views, as training
    b1, b2 = simclr_augment(x, cfg, g_b), simclr_augment(x, cfg, g_b)
    c1 = simclr_augment(x, cfg, _gen(11))
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    assert not torch.equal(a1, c1)
    assert (a1 - a2).abs().amax(dim=(1, 2, 3)).min() > 1e-3  # every image's two views differ


@pytest.mark.parametrize(
    ("channels", "h", "w", "size"),
    [(3, 32, 32, 32), (3, 40, 48, 24), (1, 32, 32, 32), (3, 96, 96, 96)],
)
def test_output_dtype_range_shape(channels: int, h: int, w: int, size: int) -> None:
    x = (_images(16, c=channels, h=h, w=w) * 255).to(torch.uint8)
    out = simclr_augment(x, SimCLRAugment(size, blur_p=0.5), _gen(12))
    assert out.dtype == torch.float32 and out.device == x.device
    assert out.shape == (16, channels, size, size)
    assert out.min() >= 0 and out.max() <= 1


def test_uint8_and_float_inputs_agree() -> None:
    x8 = (_images(16) * 255).to(torch.uint8)
    cfg = SimCLRAugment(32, blur_p=0.5)
    a = simclr_augment(x8, cfg, _gen(13))
    b = simclr_augment(x8.float() / 255, cfg, _gen(13))
    assert torch.equal(to_float(x8), x8.float() / 255)
    assert (a - b).abs().max() <= ATOL


def test_grey_input_gets_brightness_and_contrast_only() -> None:
    x = _images(64, c=1)
    cfg = SimCLRAugment(32)
    out = simclr_augment(x, cfg, _gen(14))
    assert out.shape == (64, 1, 32, 32)
    # Same views as torchvision's ops with the same parameters (saturation and hue no-ops).
    p = sample_params(64, 32, 32, cfg, _gen(14), CPU)
    assert (out - _torchvision_with_params(x, p, cfg)).abs().max() <= ATOL


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        simclr_augment(torch.rand(2, 4, 8, 8), SimCLRAugment(8), _gen(0))
    with pytest.raises(TypeError):
        simclr_augment(torch.ones(2, 3, 8, 8, dtype=torch.int32), SimCLRAugment(8), _gen(0))
    with pytest.raises(ValueError):
        SimCLRAugment(32, jitter=(0.8, 0.8, 0.8, 0.6))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_matches_cpu_parameters_and_stays_on_device() -> None:
    x = (_images(64) * 255).to(torch.uint8).cuda()
    cfg = SimCLRAugment(32, blur_p=0.5)
    gen = torch.Generator(device="cuda").manual_seed(0)
    out = simclr_augment(x, cfg, gen)
    assert out.device == x.device and out.shape == (64, 3, 32, 32)
    p = sample_params(64, 32, 32, cfg, torch.Generator(device="cuda").manual_seed(0), x.device)
    cpu_p = SimCLRParams(*(t.cpu() for t in dataclasses.astuple(p)))
    expected = apply_params(to_float(x.cpu()), cpu_p, cfg)
    assert (out.cpu() - expected).abs().max() <= 1e-4
