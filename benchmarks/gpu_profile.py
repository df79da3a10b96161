"""Where a CUDA training step's time goes (≤ 1 min on one GPU): each component of the image
loop timed alone — SimCLR views on the GPU, the encoder's forward + backward (bf16,
channels_last), the loss, the optimizer step — as wall time per call with a sync after each
call (the GPU's time or the CPU's launch time, whichever is longer), and the top operators of
a profiled full step. Writes $OUT/gpu_profile.json and prints the profiler table.

    python benchmarks/gpu_profile.py [--batch 512]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from infonce_lab.data.views import make_views
from infonce_lab.models import build_encoder
from infonce_lab.params import (
    InfoNCEConfig,
    SimCLRAugmentConfig,
    TorchvisionResNetConfig,
    TrainingConfig,
    WeinceConfig,
)
from infonce_lab.pipeline.registry import build_loss
from infonce_lab.train.optim import build_optimizer


def per_call_ms(fn, reps: int = 30) -> float:  # noqa: ANN001
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
        torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - t0) / reps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()
    dev = torch.device("cuda")
    b = args.batch
    x = torch.randint(0, 256, (b, 3, 32, 32), dtype=torch.uint8, device=dev)
    aug = SimCLRAugmentConfig()
    gen = torch.Generator(device=dev).manual_seed(0)
    enc = build_encoder(TorchvisionResNetConfig(depth=18), 3, 32).to(dev).to(
        memory_format=torch.channels_last)
    opt = build_optimizer("adam", enc, 3e-4, TrainingConfig().weight_decay)
    v1, v2 = make_views(x, aug, gen)
    batch = torch.cat([v1, v2]).contiguous(memory_format=torch.channels_last)
    out: dict[str, float | str] = {"device": torch.cuda.get_device_name(0), "batch": b}

    def fwd_bwd() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, z = enc(batch)
        z.float().square().mean().backward()

    losses = {k: build_loss(c) for k, c in (("infonce", InfoNCEConfig()), ("weince", WeinceConfig()))}
    z = torch.nn.functional.normalize(torch.randn(2 * b, 128, device=dev), dim=1).requires_grad_()

    out["views_ms"] = per_call_ms(lambda: make_views(x, aug, gen))
    out["forward_backward_ms"] = per_call_ms(fwd_bwd)
    for k, fn in losses.items():
        out[f"loss_{k}_ms"] = per_call_ms(lambda fn=fn: fn(*z.chunk(2), 0.5)[0].backward())
    out["optimizer_step_ms"] = per_call_ms(opt.step)

    def step() -> None:
        w1, w2 = make_views(x, aug, gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, zz = enc(torch.cat([w1, w2]).contiguous(memory_format=torch.channels_last))
        loss, _ = losses["infonce"](*zz.float().chunk(2), 0.5)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    out["full_step_synced_ms"] = per_call_ms(step)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(30):
        step()
    torch.cuda.synchronize()
    out["full_step_unsynced_ms"] = 1e3 * (time.perf_counter() - t0) / 30
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    ev = prof.key_averages()
    out["cuda_kernel_ms_per_step"] = sum(e.self_device_time_total for e in ev) / 5e3
    out["kernel_launches_per_step"] = sum(e.count for e in ev if e.key in (
        "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")) / 5
    dest = Path(os.environ.get("OUT", "reports")) / "gpu_profile.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    print(ev.table(sort_by="cpu_time_total", row_limit=25, max_name_column_width=50))


if __name__ == "__main__":
    main()
