"""SimCLR's augmentation (WEINCE App. F.2), batched on tensors with per-image parameters.

The reference pipeline (Spijkervet SimCLR) is torchvision's RandomResizedCrop → horizontal flip →
RandomApply(ColorJitter(0.8, 0.8, 0.8, 0.2), p 0.8) → RandomGrayscale(0.2), called once per image
in a DataLoader worker. Here one call draws every image's parameters as tensors from one
``torch.Generator`` and applies them to the whole batch on its device, so the augmentation can run
inside the training step on the GPU and is reproducible from the generator state.

Each op reproduces ``torchvision.transforms.v2.functional`` on float tensors (the tests compare
them with the same parameters), and the parameter sampling follows torchvision's: ten crop
candidates per image with the first accepted one kept, jitter factors uniform in
``[max(0, 1 − v), 1 + v]`` (hue in ``[−v, v]``) and a random order of the four jitter ops.

Resampling uses a per-image bilinear weight matrix (rows and columns) instead of ``grid_sample``:
bilinear interpolation of the cropped image clamps at the *crop's* border, whereas sampling the
full image with an affine grid blends in the pixels just outside the crop on the border rows and
columns. The matrix form reproduces ``resized_crop`` to float rounding, and with ``antialias`` it
also reproduces torchvision's (and PIL's) antialiased downsampling when the crop is larger than
``size``. For SimCLR at the native resolution (crop ≤ image = size) it only ever upsamples, where
antialiasing changes nothing.

Hand-written beside libraries for a measured reason: on 32 × 32 batches on the CPU it is faster
than torchvision's per-image pipeline with the same parameters, on one thread each
(``augment.torchvision_over_ours`` in reports/bench.json, docs/benchmarks.md) — torchvision's
per-image calls are the data loader bottleneck the batched form removes — and than kornia's
batched augmentation (measured when this was chosen; kornia is not a dependency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from infonce_lab.data.batch_part import BatchPart

# ITU-R 601-2 luma, with torchvision's rounded coefficients (they sum to 0.9999, as there).
_LUMA = (0.2989, 0.587, 0.114)
# ColorJitter's op ids in torchvision's random order (``fn_idx``).
BRIGHTNESS, CONTRAST, SATURATION, HUE = 0, 1, 2, 3
_CROP_ATTEMPTS = 10
# Elements per image chunk on CPU (about 4 MB of float32), see ``simclr_augment``.
CPU_CHUNK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class SimCLRAugment:
    """SimCLR augmentation settings; defaults are the paper's 32 px pipeline (no blur)."""

    size: int
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_p: float = 0.5
    # brightness, contrast, saturation, hue
    jitter: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 0.2)
    jitter_p: float = 0.8
    gray_p: float = 0.2
    blur_p: float = 0.0  # 0: off (the paper at 32 px); SimCLR uses 0.5 at 96 px and up
    blur_sigma: tuple[float, float] = (0.1, 2.0)
    # torchvision v2's default; only matters when a crop is larger than ``size`` (downsampling).
    antialias: bool = True

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"size must be positive, got {self.size}")
        for name in ("scale", "ratio", "blur_sigma"):
            lo, hi = getattr(self, name)
            if not 0.0 < lo <= hi:
                raise ValueError(f"{name} must satisfy 0 < lo <= hi, got {getattr(self, name)}")
        for name in ("flip_p", "jitter_p", "gray_p", "blur_p"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability, got {p}")
        if min(self.jitter) < 0 or self.jitter[3] > 0.5:
            raise ValueError(f"jitter must be non-negative with hue <= 0.5, got {self.jitter}")

    @property
    def blur_kernel_size(self) -> int:
        """SimCLR's kernel: 10% of the image side, made odd (9 at 96 px, 23 at 224 px)."""
        return 2 * (int(0.1 * self.size) // 2) + 1


@dataclass(frozen=True)
class SimCLRParams:
    """Per-image parameters of one augmentation call; every field has leading dimension N."""

    top: torch.Tensor  # (N,) long, crop box in input pixels
    left: torch.Tensor
    height: torch.Tensor
    width: torch.Tensor
    flip: torch.Tensor  # (N,) bool
    jitter: torch.Tensor  # (N,) bool: ColorJitter applied at all
    factors: torch.Tensor  # (N, 4) float: brightness, contrast, saturation factors, hue shift
    order: torch.Tensor  # (N, 4) long: a permutation of the op ids, applied left to right
    gray: torch.Tensor  # (N,) bool
    blur: torch.Tensor  # (N,) bool
    sigma: torch.Tensor  # (N,) float


# ------------------------------------------------------------------------------------ sampling
def _uniform(
    shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device
) -> torch.Tensor:
    return torch.rand(shape, generator=gen, device=device) * (hi - lo) + lo


def _randint_below(bound: torch.Tensor, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Uniform integers in [0, bound) per element; ``torch.randint`` takes one scalar bound."""
    u = torch.rand(bound.shape, generator=gen, device=device)
    return torch.minimum((u * bound).long(), bound - 1)


def sample_crop_boxes(
    n: int,
    height: int,
    width: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    gen: torch.Generator,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(top, left, h, w) per image, as ``RandomResizedCrop.make_params`` draws them.

    torchvision tries up to ten (area, aspect) candidates in turn; drawing all ten at once and
    keeping the first accepted one gives the same distribution without a loop over images.
    """
    area = height * width
    target = area * _uniform((n, _CROP_ATTEMPTS), scale[0], scale[1], gen, device)
    log_r = _uniform((n, _CROP_ATTEMPTS), math.log(ratio[0]), math.log(ratio[1]), gen, device)
    aspect = torch.exp(log_r)
    # torch.round rounds half to even, as Python's round does in torchvision.
    w = torch.round(torch.sqrt(target * aspect)).long()
    h = torch.round(torch.sqrt(target / aspect)).long()
    ok = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = ok.int().argmax(dim=1, keepdim=True)  # argmax returns the first maximum
    found = ok.any(dim=1)

    # torchvision's fallback: the central crop, clamped to the ratio range.
    in_ratio = width / height
    if in_ratio < min(ratio):
        fw, fh = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        fw, fh = int(round(height * max(ratio))), height
    else:
        fw, fh = width, height
    h = torch.where(found, h.gather(1, first).squeeze(1), fh)
    w = torch.where(found, w.gather(1, first).squeeze(1), fw)
    top_draw = _randint_below(height - h + 1, gen, device)
    left_draw = _randint_below(width - w + 1, gen, device)
    top = torch.where(found, top_draw, (height - fh) // 2)
    left = torch.where(found, left_draw, (width - fw) // 2)
    return top, left, h, w


def _jitter_range(v: float, hue: bool) -> tuple[float, float]:
    return (-v, v) if hue else (max(0.0, 1.0 - v), 1.0 + v)


def sample_params(
    n: int, height: int, width: int, cfg: SimCLRAugment, gen: torch.Generator, device: torch.device
) -> SimCLRParams:
    """Draw every image's parameters; the number of draws does not depend on their values."""
    top, left, h, w = sample_crop_boxes(n, height, width, cfg.scale, cfg.ratio, gen, device)
    flip = torch.rand(n, generator=gen, device=device) < cfg.flip_p
    jitter = torch.rand(n, generator=gen, device=device) < cfg.jitter_p
    factors = torch.stack(
        [
            _uniform((n,), *_jitter_range(v, k == HUE), gen, device)
            for k, v in enumerate(cfg.jitter)
        ],
        dim=1,
    )
    # argsort of iid uniforms is a uniform random permutation, one per row.
    order = torch.rand((n, 4), generator=gen, device=device).argsort(dim=1)
    gray = torch.rand(n, generator=gen, device=device) < cfg.gray_p
    blur = torch.rand(n, generator=gen, device=device) < cfg.blur_p
    sigma = _uniform((n,), cfg.blur_sigma[0], cfg.blur_sigma[1], gen, device)
    return SimCLRParams(top, left, h, w, flip, jitter, factors, order, gray, blur, sigma)


# ------------------------------------------------------------------------------------- the ops
def to_float(x: torch.Tensor) -> torch.Tensor:
    """uint8 in 0..255 or float in [0, 1] → float32 in [0, 1]."""
    if x.dtype == torch.uint8:
        return x.to(torch.float32).div_(255.0)
    if not x.is_floating_point():
        raise TypeError(f"expected uint8 or float images, got {x.dtype}")
    return x.to(torch.float32)


def _resample_matrix(
    start: torch.Tensor, length: torch.Tensor, in_size: int, out_size: int, antialias: bool
) -> torch.Tensor:
    """(N, out_size, in_size) weights of bilinear resampling of [start, start + length) per image.

    Triangle filter at the output pixel's centre, restricted to the crop and normalised: for
    upsampling this equals ``interpolate(bilinear, align_corners=False)`` with its clamp at the
    crop border; with ``antialias`` and downsampling the filter widens by the scale, as in
    torch's (PIL's) antialiased bilinear.
    """
    dev = start.device
    scale = (length.float() / out_size).view(-1, 1, 1)
    centre = scale * (torch.arange(out_size, device=dev, dtype=torch.float32).view(1, -1, 1) + 0.5)
    j = (torch.arange(in_size, device=dev).view(1, 1, -1) - start.view(-1, 1, 1)).float()
    inside = (j >= 0) & (j < length.view(-1, 1, 1))
    if antialias:
        dist = (j + 0.5 - centre).abs_().div_(scale.clamp(min=1.0))
        wts = dist.neg_().add_(1.0).clamp_(min=0.0).mul_(inside)
        return wts.div_(wts.sum(dim=2, keepdim=True))
    # Plain bilinear: source coordinate clamped into the crop, two taps.
    src = torch.minimum((centre - 0.5).clamp(min=0.0), (length - 1).float().view(-1, 1, 1))
    return (j - src).abs_().neg_().add_(1.0).clamp_(min=0.0).mul_(inside)


def resized_crop(
    x: torch.Tensor,
    top: torch.Tensor,
    left: torch.Tensor,
    height: torch.Tensor,
    width: torch.Tensor,
    size: int,
    antialias: bool = True,
    flip: torch.Tensor | None = None,
) -> torch.Tensor:
    """Crop each image of (N, C, H, W) float ``x`` to its own box and resize it to size × size.

    ``flip`` (N,) bool mirrors those images horizontally; reversing the rows of the small column
    weight matrix does it for free instead of another pass over the images.
    """
    n, c, h, w = x.shape
    wy = _resample_matrix(top, height, h, size, antialias)  # (N, S, H)
    wx = _resample_matrix(left, width, w, size, antialias)  # (N, S, W)
    if flip is not None:
        wx = torch.where(flip.view(-1, 1, 1), wx.flip(1), wx)
    cols = torch.bmm(x.reshape(n, c * h, w), wx.transpose(1, 2))  # (N, C·H, S)
    return torch.matmul(wy.unsqueeze(1), cols.view(n, c, h, size))  # (N, C, S, S)


def _per_image(v: torch.Tensor) -> torch.Tensor:
    return v.view(-1, 1, 1, 1)


def _select_(x: torch.Tensor, mask: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x ← y on the images in ``mask``, in place.

    lerp with weight 0 or 1 returns exactly x or y; unlike ``torch.where`` it does not allocate a
    new batch, which on CPU (page faults on every large allocation) is most of an op's cost.
    """
    return x.lerp_(y, _per_image(mask.to(x.dtype)))


def rgb_to_grayscale(x: torch.Tensor) -> torch.Tensor:
    """(N, 1, H, W) luma of float RGB (or the image itself when it is already grey)."""
    if x.shape[1] == 1:
        return x
    r, g, b = x.unbind(dim=1)
    return (r * _LUMA[0]).add_(g, alpha=_LUMA[1]).add_(b, alpha=_LUMA[2]).unsqueeze(1)


def _blend_(x: torch.Tensor, ref: torch.Tensor, ratio: torch.Tensor) -> torch.Tensor:
    """torchvision's ``_blend``, x·r + ref·(1 − r) clamped, written into x."""
    return x.lerp_(ref, _per_image(1.0 - ratio)).clamp_(0.0, 1.0)


def adjust_hue(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Rotate each image's hue by ``shift`` (a fraction of a turn, |shift| <= 0.5).

    Same HSV round trip as torchvision, written in the closed form: a hue rotation keeps each
    pixel's max (V) and min (V·(1 − S)), and channel c becomes V − (V − min)·clamp(min(k, 4 − k),
    0, 1) with k = (offset_c + 6h) mod 6. That is a few passes instead of torchvision's two full
    colour-space conversions; it agrees with it to ~1e-6.
    """
    if x.shape[1] == 1:
        return x
    r, g, b = x.unbind(dim=1)
    minc, maxc = torch.aminmax(x, dim=1)
    chroma = maxc - minc
    safe = torch.where(chroma == 0, 1.0, chroma)  # grey pixels: any hue, chroma 0 wipes it
    # Hue in sixths of a turn, from whichever channel is the max (r before g before b on ties).
    h6 = torch.where(
        maxc == r,
        (g - b).div_(safe),
        torch.where(maxc == g, (b - r).div_(safe).add_(2.0), (r - g).div_(safe).add_(4.0)),
    )
    h6 = h6.div_(6.0).add_(shift.view(-1, 1, 1)).remainder_(1.0).mul_(6.0)
    # Channel offsets 5, 3, 1 (R, G, B) in sixths of a turn; made on the device because a
    # host-to-device copy would synchronise the CUDA stream inside the training step.
    offsets = torch.arange(5.0, 0.0, -2.0, device=x.device).view(1, 3, 1, 1)
    k = (h6.unsqueeze(1) + offsets).remainder_(6.0)
    k = torch.minimum(k, 4.0 - k).clamp_(0.0, 1.0)
    return k.mul_(chroma.unsqueeze(1)).neg_().add_(maxc.unsqueeze(1))


def _cheap_jitter_steps_(
    x: torch.Tensor,
    factors: torch.Tensor,
    order: torch.Tensor,
    active: torch.Tensor,
    positions: range,
    grey: bool,
) -> torch.Tensor:
    """Apply brightness / contrast / saturation at the given positions of each image's order.

    All three are ``x·r + ref·(1 − r)`` (ref 0, the mean grey, or the grey image), so one blend
    per position covers every image; ratio 1 leaves an image exactly unchanged. In place.
    """
    for pos in positions:
        op = order[:, pos]
        use = active[:, pos] & (op != HUE)
        if grey:  # saturation is a no-op on grey images, as in torchvision
            use = use & (op != SATURATION)
        ratio = torch.where(use, factors.gather(1, op.view(-1, 1)).squeeze(1), 1.0)
        gray = rgb_to_grayscale(x)
        mean = gray.mean(dim=(1, 2, 3), keepdim=True)
        is_sat = _per_image(op == SATURATION).to(x.dtype)
        is_con = _per_image(op == CONTRAST).to(x.dtype)
        ref = (gray * is_sat).add_(mean * is_con)  # brightness: ref 0
        _blend_(x, ref, ratio)
    return x


def color_jitter_(
    x: torch.Tensor,
    factors: torch.Tensor,
    order: torch.Tensor,
    apply: torch.Tensor,
    hue: bool = True,
) -> torch.Tensor:
    """ColorJitter with per-image factors and op order on the images in ``apply``, in place.

    The hue step is the expensive one, and every image has it at exactly one position: so the
    cheap steps before each image's hue position run first, then one hue pass over the batch,
    then the cheap steps after it. ``hue=False`` (hue range 0) skips the hue pass; it is a flag
    rather than a look at ``factors`` to avoid a device sync.
    """
    grey = x.shape[1] == 1
    pos = torch.arange(4, device=x.device).view(1, 4)
    applied = apply.view(-1, 1)
    if grey or not hue:
        return _cheap_jitter_steps_(x, factors, order, applied.expand(-1, 4), range(4), grey)
    hue_pos = (order == HUE).int().argmax(dim=1, keepdim=True)
    _cheap_jitter_steps_(x, factors, order, applied & (pos < hue_pos), range(3), grey)
    _select_(x, apply, adjust_hue(x, factors[:, HUE]))
    return _cheap_jitter_steps_(x, factors, order, applied & (pos > hue_pos), range(1, 4), grey)


def gaussian_kernels(sigma: torch.Tensor, kernel_size: int) -> torch.Tensor:
    """(N, k) normalised 1-D Gaussian taps, torchvision's ``_get_gaussian_kernel1d`` per sigma."""
    lim = (kernel_size - 1) / (2.0 * math.sqrt(2.0))
    t = torch.linspace(-lim, lim, kernel_size, device=sigma.device)
    return torch.softmax(-(t.view(1, -1) / sigma.view(-1, 1)).pow(2), dim=1)


def gaussian_blur(x: torch.Tensor, sigma: torch.Tensor, kernel_size: int) -> torch.Tensor:
    """Separable Gaussian blur, reflect-padded, with each image's own sigma (grouped conv)."""
    n, c, h, w = x.shape
    k = kernel_size
    taps = gaussian_kernels(sigma, k).repeat_interleave(c, dim=0)  # (N·C, k)
    flat = F.pad(x.reshape(1, n * c, h, w), [k // 2] * 4, mode="reflect")
    flat = F.conv2d(flat, taps.view(n * c, 1, k, 1), groups=n * c)
    flat = F.conv2d(flat, taps.view(n * c, 1, 1, k), groups=n * c)
    return flat.view(n, c, h, w)


# ------------------------------------------------------------------------------------ pipeline
def apply_params(x: torch.Tensor, p: SimCLRParams, cfg: SimCLRAugment) -> torch.Tensor:
    """The augmentation of float images ``x`` (N, C, H, W) in [0, 1] with given parameters."""
    # A fresh batch, so every later step may work in place.
    out = resized_crop(x, p.top, p.left, p.height, p.width, cfg.size, cfg.antialias, p.flip)
    if cfg.jitter_p > 0 and any(v > 0 for v in cfg.jitter):
        color_jitter_(out, p.factors, p.order, p.jitter, hue=cfg.jitter[HUE] > 0)
    if cfg.gray_p > 0 and out.shape[1] == 3:
        _select_(out, p.gray, rgb_to_grayscale(out))
    if cfg.blur_p > 0 and cfg.blur_kernel_size > 1:
        _select_(out, p.blur, gaussian_blur(out, p.sigma, cfg.blur_kernel_size))
    # Interpolation weights sum to one up to rounding; keep the promised range exact.
    return out.clamp_(0.0, 1.0)


def _slice_params(p: SimCLRParams, sl: slice) -> SimCLRParams:
    return SimCLRParams(*(getattr(p, f.name)[sl] for f in fields(p)))


def simclr_augment(x: torch.Tensor, cfg: SimCLRAugment, gen: torch.Generator,
                   part: BatchPart | None = None) -> torch.Tensor:
    """One SimCLR view of each image of ``x`` (N, C, H, W), uint8 or float in [0, 1], C ∈ {1, 3};
    with ``part``, ``x`` is that part of a larger batch (the parameters are drawn for all of it).

    Returns float32 (N, C, size, size) in [0, 1] on x's device; ``gen`` must live there too.
    """
    if x.ndim != 4 or x.shape[1] not in (1, 3):
        raise ValueError(f"expected (N, 1 or 3, H, W) images, got shape {tuple(x.shape)}")
    n, c, h, w = x.shape
    params = sample_params(n if part is None else part.total, h, w, cfg, gen, x.device)
    if part is not None:
        params = _slice_params(params, part.rows(n))
    if x.device.type != "cpu":
        return apply_params(to_float(x), params, cfg)
    # On CPU the ops are memory-bound: chunks whose intermediates stay in cache run ~1.5× faster.
    # Parameters are drawn for the whole batch first, so chunking does not change the views.
    chunk = max(1, CPU_CHUNK_ELEMENTS // (c * max(cfg.size**2, h * w)))
    return torch.cat(
        [
            apply_params(
                to_float(x[i : i + chunk]), _slice_params(params, slice(i, i + chunk)), cfg
            )
            for i in range(0, n, chunk)
        ]
    )
