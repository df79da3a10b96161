"""Micro-benchmark: batched SimCLR views against torchvision's per-image pipeline.

    python benchmarks/bench_augment.py [--batch 512] [--size 32] [--device cpu|cuda] [--threads N]

Prints the median milliseconds for two views of the batch (two ``simclr_augment`` calls, as
training draws them), the per-stage split, and torchvision's v2 Compose applied image by image
(single-threaded, its fastest setting for small images) over the same 2·batch images. Not wired
into the pipeline.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torchvision.transforms.v2 as T

from infonce_lab.data.simclr_augment import (
    SimCLRAugment,
    adjust_hue,
    color_jitter_,
    resized_crop,
    sample_params,
    simclr_augment,
    to_float,
)


def median_ms(fn: Callable[[], object], device: torch.device, repeats: int) -> float:
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: leave as is)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--blur-p", type=float, default=0.0)
    ap.add_argument("--skip-torchvision", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    n, s = args.batch, args.size
    x8 = torch.randint(
        0, 256, (n, 3, s, s), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    ).to(dev)
    cfg = SimCLRAugment(s, blur_p=args.blur_p)
    gen = torch.Generator(device=dev).manual_seed(0)

    print(
        f"device {dev}, threads {torch.get_num_threads()}, batch {n}, {s} px, blur_p {args.blur_p}"
    )
    views_ms = median_ms(lambda: (simclr_augment(x8, cfg, gen), simclr_augment(x8, cfg, gen)),
                         dev, args.repeats)
    print(f"two views (2 × simclr_augment of {n} images): {views_ms:.1f} ms")
    both = to_float(torch.cat([x8, x8]))
    p = sample_params(2 * n, s, s, cfg, gen, dev)
    stages: dict[str, Callable[[], object]] = {
        "sample_params": lambda: sample_params(2 * n, s, s, cfg, gen, dev),
        "resized_crop + flip": lambda: resized_crop(
            both, p.top, p.left, p.height, p.width, s, True, p.flip
        ),
        "color_jitter (all)": lambda: color_jitter_(both.clone(), p.factors, p.order, p.jitter),
        "  of which hue": lambda: adjust_hue(both, p.factors[:, 3]),
    }
    for name, fn in stages.items():
        print(f"  {name:22s} {median_ms(fn, dev, args.repeats):8.1f} ms")

    if args.skip_torchvision:
        return
    tv = T.Compose(
        [
            T.RandomResizedCrop(s),
            T.RandomHorizontalFlip(),
            T.RandomApply([T.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8),
            T.RandomGrayscale(0.2),
        ]
    )
    imgs = both.cpu()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ms = median_ms(
        lambda: [tv(img) for img in imgs], torch.device("cpu"), max(1, args.repeats // 3)
    )
    torch.set_num_threads(threads)
    print(f"torchvision v2 per image, 1 thread (2 × {n} images): {ms:.1f} ms")


if __name__ == "__main__":
    main()
