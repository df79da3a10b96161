"""The image step at the paper's scale, on one GPU (a few minutes on an H200), as one prepared
script for the device machine: for torchvision ResNet-18 and ResNet-50 (the CIFAR stem at
32 px) at batch 256 and 512 in bf16 with channels_last —

- views/s of the full training step (a batch gathered from device-resident uint8 images, SimCLR's
  two views made there, forward, InfoNCE and WEINCE, backward, Adam), and the step against the
  bare backbone's forward + backward on fixed views (the goal: ≤ 1.10×);
- the share of each part timed alone with a sync after each call: data, augmentation, forward,
  backward, loss, optimizer;
- peak GPU memory of a step against the footprint estimate the pretrain stage refuses sizes by
  (models/footprint.py: the activations a forward saves, counted in float32 — a lower bound);
- torch.compile on and off (ResNet-18, batch 256: steady-state step and the first step's cost);
- the DDP step under torchrun with one process and with one per GPU (weak scaling: batch per
  process fixed), when there are two GPUs or more;
- with ``--rehearsal``, first: the shrunk paper profiles from download to report
  (tests/e2e/test_paper_rehearsal.py, which needs the ``test`` extra) on the GPU — its
  ``training.device: auto`` picks CUDA — and which device each pretraining run recorded.

Writes ``$OUT/bench_gpu.json`` (or ``--out``; docs/paper-scale.md quotes the committed one).
``--cpu --quick`` runs the same code on the CPU at toy sizes, fp32 (the test that keeps it
working without a GPU); torchrun then starts two CPU processes (gloo).

    python benchmarks/gpu_scale.py --rehearsal        # on the GPU machine
    python benchmarks/gpu_scale.py --cpu --quick --out /tmp/bench_gpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch

from infonce_lab.data.views import make_views
from infonce_lab.models import build_encoder
from infonce_lab.params import (
    InfoNCEConfig,
    SimCLRAugmentConfig,
    TorchvisionResNetConfig,
    WeinceConfig,
)
from infonce_lab.pipeline.registry import build_loss
from infonce_lab.train.optim import build_optimizer

PAPER = {"depths": (18, 50), "batches": (256, 512), "size": 32, "images": 50_000, "reps": 20}
QUICK = {"depths": (18,), "batches": (8,), "size": 16, "images": 64, "reps": 2}
TAU = 0.5  # the WEINCE paper's τ


class Rig:
    """One backbone at one batch on one device: the step's parts as separate callables, so each
    can be timed alone and the full step is exactly their sequence."""

    def __init__(self, depth: int, batch: int, size: int, images: int, device: torch.device,
                 compile_: bool = False) -> None:
        self.device, self.batch, self.cuda = device, batch, device.type == "cuda"
        gen = torch.Generator(device=device).manual_seed(0)
        self.gen = gen
        self.images = torch.randint(0, 256, (images, 3, size, size), dtype=torch.uint8,
                                    device=device, generator=gen)
        self.aug = SimCLRAugmentConfig()
        self.cfg = TorchvisionResNetConfig(depth=depth)
        enc = build_encoder(self.cfg, 3, size).to(device)
        if self.cuda:
            enc = enc.to(memory_format=torch.channels_last)
        # inductor on the GPU; on the CPU (the test) dynamo alone, which needs no C++ compiler
        self.encoder = (torch.compile(enc, backend="inductor" if self.cuda else "eager")
                        if compile_ else enc)
        self.opt = build_optimizer("adam", enc, 3e-4, 1e-6, fused=self.cuda)
        self.losses = {"infonce": build_loss(InfoNCEConfig()), "weince": build_loss(WeinceConfig())}
        self.x = self.gather()
        self.views = self.augment(self.x)
        self.z = self.forward(self.views)[1].detach()

    def autocast(self) -> AbstractContextManager[Any]:
        return torch.autocast("cuda", dtype=torch.bfloat16) if self.cuda else nullcontext()

    def gather(self) -> torch.Tensor:
        idx = torch.randint(0, len(self.images), (self.batch,), device=self.device,
                            generator=self.gen)
        return self.images.index_select(0, idx)

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        v = torch.cat(make_views(x, self.aug, self.gen))
        return v.contiguous(memory_format=torch.channels_last) if self.cuda else v

    def forward(self, views: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with self.autocast():
            return self.encoder(views)

    def forward_backward(self) -> None:
        _, z = self.forward(self.views)
        z.float().square().mean().backward()

    def loss_stage(self, name: str) -> None:
        z = self.z.float().requires_grad_(True)
        loss, _ = self.losses[name](*z.chunk(2), TAU)
        loss.backward()

    def step(self, loss_name: str = "infonce") -> None:
        views = self.augment(self.gather())
        _, z = self.forward(views)
        loss, _ = self.losses[loss_name](*z.float().chunk(2), TAU)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def ms(self, fn: Callable[[], Any], reps: int, warmup: int = 2) -> float:
        """Median wall time per call, synchronised after each (the device's time or the host's
        launch time, whichever is longer)."""
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(1e3 * (time.perf_counter() - t0))
        return statistics.median(times)


def measure(depth: int, batch: int, size: int, images: int, reps: int,
            device: torch.device) -> dict[str, Any]:
    """Throughput, the parts' shares, the step over the bare forward + backward, and peak memory
    against the footprint estimate, for one backbone and batch."""
    from infonce_lab.models.footprint import training_activation_bytes

    rig = Rig(depth, batch, size, images, device)
    parts = {
        "data": rig.ms(rig.gather, reps),
        "augmentation": rig.ms(lambda: rig.augment(rig.x), reps),
        "forward": rig.ms(lambda: rig.forward(rig.views), reps),
        "forward_backward": rig.ms(rig.forward_backward, reps),
        "loss_infonce": rig.ms(lambda: rig.loss_stage("infonce"), reps),
        "loss_weince": rig.ms(lambda: rig.loss_stage("weince"), reps),
        "optimizer": rig.ms(rig.opt.step, reps),
    }
    parts["backward"] = parts["forward_backward"] - parts["forward"]
    steps = {name: rig.ms(lambda n=name: rig.step(n), reps) for name in rig.losses}
    out: dict[str, Any] = {
        "depth": depth, "batch": batch, "views": 2 * batch, "size": size,
        "parts_ms": parts, "step_ms": steps,
        "views_per_s": {n: 2e3 * batch / ms for n, ms in steps.items()},
        "step_over_forward_backward": {n: ms / parts["forward_backward"]
                                       for n, ms in steps.items()},
        "shares_of_infonce_step": {k: parts[k] / steps["infonce"] for k in
                                   ("data", "augmentation", "forward", "backward",
                                    "loss_infonce", "optimizer")},
    }
    estimate = training_activation_bytes(rig.cfg, 3, size, 2 * batch)
    out["footprint_estimate_bytes"] = estimate
    if rig.cuda:
        torch.cuda.reset_peak_memory_stats(device)
        rig.step()
        rig.sync()
        peak = torch.cuda.max_memory_allocated(device)
        out["peak_bytes"] = peak
        out["peak_over_estimate"] = peak / estimate
    return out


def compile_cost(size: int, batch: int, images: int, reps: int,
                 device: torch.device) -> dict[str, float]:
    """ResNet-18's step with and without torch.compile: steady state, and the first step (where
    compilation happens)."""
    out: dict[str, float] = {}
    for flag in (False, True):
        rig = Rig(18, batch, size, images, device, compile_=flag)
        t0 = time.perf_counter()
        rig.step()
        rig.sync()
        key = "compiled" if flag else "eager"
        out[f"{key}_first_step_s"] = time.perf_counter() - t0
        out[f"{key}_step_ms"] = rig.ms(rig.step, reps)
    out["compiled_over_eager"] = out["compiled_step_ms"] / out["eager_step_ms"]
    return out


def ddp_worker(args: argparse.Namespace) -> None:
    """One torchrun rank: the DDP step at this rank's batch; rank 0 writes the median."""
    import torch.distributed as dist

    cuda = not args.cpu
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device(f"cuda:{int(os.environ['LOCAL_RANK'])}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    rig = Rig(args.ddp_depth, args.ddp_batch, args.size, args.images, device)
    rig.encoder = torch.nn.parallel.DistributedDataParallel(
        rig.encoder, device_ids=[device.index] if cuda else None)
    ms = rig.ms(rig.step, args.reps)
    if rank == 0:
        Path(args.ddp_out).write_text(json.dumps(
            {"processes": dist.get_world_size(), "step_ms": ms,
             "views_per_s": 2e3 * args.ddp_batch * dist.get_world_size() / ms}))
    dist.destroy_process_group()


def torchrun_scaling(args: argparse.Namespace, depth: int, batch: int) -> list[dict[str, Any]]:
    """The DDP step under torchrun with one process and with one per GPU (two CPU processes
    with --cpu)."""
    import tempfile

    counts = [1, 2] if args.cpu else sorted({1, torch.cuda.device_count()})
    rows = []
    for n in counts:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(_torchrun(args, n, depth, batch, Path(tmp) / "ddp.json"))
    return rows


def _torchrun(args: argparse.Namespace, n: int, depth: int, batch: int,
              dest: Path) -> dict[str, Any]:
    """``n`` ranks of :func:`ddp_worker` under torchrun (an argument list, no shell)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={n}", __file__, "--ddp-worker", "--ddp-out", str(dest),
           "--ddp-depth", str(depth), "--ddp-batch", str(batch), "--size", str(args.size),
           "--images", str(args.images), "--reps", str(args.reps),
           *(["--cpu"] if args.cpu else [])]
    subprocess.run(cmd, check=True, timeout=900)
    return json.loads(dest.read_text())


def rehearsal(seconds: int = 900) -> dict[str, Any]:
    """The paper-scale rehearsal test on this machine; pass or fail, its time, and the devices
    its pretraining runs recorded (each run.json's ``device``)."""
    import tempfile

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", tmp,
             str(root / "tests/e2e/test_paper_rehearsal.py")],
            cwd=root, capture_output=True, text=True, timeout=seconds)
        devices = sorted({json.loads(p.read_text())["device"]
                          for p in Path(tmp).glob("lab*/reports/train/*/*/run.json")})
    return {"passed": proc.returncode == 0, "seconds": time.perf_counter() - start,
            "run_devices": devices, "tail": (proc.stdout + proc.stderr)[-2000:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (fp32), for the test")
    ap.add_argument("--quick", action="store_true", help="toy sizes")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--rehearsal", action="store_true",
                    help="first run the paper-scale rehearsal test here (needs the test extra)")
    ap.add_argument("--ddp-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ddp-out", default="", help=argparse.SUPPRESS)
    ap.add_argument("--ddp-depth", type=int, default=18, help=argparse.SUPPRESS)
    ap.add_argument("--ddp-batch", type=int, default=256, help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, default=32, help=argparse.SUPPRESS)
    ap.add_argument("--images", type=int, default=PAPER["images"], help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=PAPER["reps"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ddp_worker:
        ddp_worker(args)
        return
    if not args.cpu and not torch.cuda.is_available():
        sys.exit("no CUDA device: run this on the GPU machine, or pass --cpu --quick")
    sizes = QUICK if args.quick else PAPER
    args.images, args.reps, args.size = sizes["images"], sizes["reps"], sizes["size"]
    device = torch.device("cpu" if args.cpu else "cuda")
    torch.manual_seed(0)
    dest = args.out or Path(os.environ.get("OUT", "reports")) / "bench_gpu.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"rehearsal": rehearsal() if args.rehearsal else None}
    result |= {
        "device": "cpu" if args.cpu else torch.cuda.get_device_name(0), "torch": torch.__version__,
        "quick": args.quick, "precision": "fp32" if args.cpu else "bf16",
        "steps": [measure(d, b, sizes["size"], sizes["images"], sizes["reps"], device)
                  for d in sizes["depths"] for b in sizes["batches"]],
        "compile": compile_cost(sizes["size"], sizes["batches"][0], sizes["images"],
                                sizes["reps"], device),
        "torchrun": torchrun_scaling(args, 18, sizes["batches"][0]),
    }
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_text(json.dumps(result, indent=2))
    tmp.replace(dest)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
