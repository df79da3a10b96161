"""The prepared GPU check (≤ 5 min): the training loop's CUDA path on CIFAR-shaped random uint8
data — torchvision ResNet-18 (CIFAR stem), batch 512, bf16 autocast, channels_last, SimCLR views
made on the GPU — for InfoNCE and WEINCE. Writes samples/s and the WEINCE/InfoNCE step-time
ratio (the paper: +0.67% at batch 256 on an L40S, SPECS C.5) to $OUT/gpu_check.json (or
reports/gpu_check.json).

    python benchmarks/gpu_check.py [--steps 60] [--batch 512]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from infonce_lab.config import (
    FixedSchedule,
    InfoNCEConfig,
    TorchvisionResNetConfig,
    TrainingConfig,
    WeinceConfig,
)
from infonce_lab.config_vision import SimCLRAugmentConfig
from infonce_lab.training import train_encoder


def run(loss, batch: int, steps: int) -> dict[str, float]:  # noqa: ANN001
    n = batch * max(2, steps // 4)
    x = np.random.default_rng(0).integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    epochs = max(1, steps * batch // n)
    cfg = TrainingConfig(epochs=epochs, batch_size=batch, lr=3e-4, lr_schedule="constant",
                         warmup_epochs=0, log_every_steps=10, device="cuda", precision="bf16",
                         channels_last=True)
    logs: list[dict[str, float]] = []
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    res = train_encoder(x, backbone=TorchvisionResNetConfig(depth=18), loss=loss,
                        schedule=FixedSchedule(tau=0.5), augment=SimCLRAugmentConfig(),
                        training=cfg, seed=0, on_log=lambda s, r: logs.append(r))
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    steady = [r["samples_per_s"] for r in logs[2:]] or [r["samples_per_s"] for r in logs]
    return {"steps": res.steps, "wall_s": wall, "final_loss": res.final_loss,
            # samples/s counts both views (2 × batch per step), as the telemetry does
            "views_per_s_median": float(np.median(steady)),
            "step_ms_median": 1e3 * 2 * batch / float(np.median(steady))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check is for a GPU machine")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "batch": args.batch}
    out["infonce"] = run(InfoNCEConfig(), args.batch, args.steps)
    out["weince"] = run(WeinceConfig(), args.batch, args.steps)
    out["weince_over_infonce_step_time"] = (out["weince"]["step_ms_median"]
                                            / out["infonce"]["step_ms_median"])
    dest = Path(os.environ.get("OUT", "reports")) / "gpu_check.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
