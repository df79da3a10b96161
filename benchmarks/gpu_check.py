"""The prepared GPU check (≤ 5 min on one GPU). Writes $OUT/gpu_check.json (or
reports/gpu_check.json) after every part, so a killed run still returns what it measured.

1. *Loss parity*: InfoNCE, WEINCE and DirectAU on CUDA (fp32) against float64 on the CPU —
   value and gradient, N = 512, d = 128.
2. *Loss-only cost*: forward + backward of each loss alone (CUDA events), batch 256 and 1024;
   WEINCE/InfoNCE ratio.
3. *Training loop*: the real CUDA path on CIFAR-shaped random uint8 data — torchvision
   ResNet-18 (CIFAR stem), bf16 autocast, channels_last, SimCLR views made on the GPU — InfoNCE
   and WEINCE at batch 256 (the paper's, WEINCE §3: +0.67% per step on an L40S) and 512, and
   InfoNCE with torch.compile; samples/s and the WEINCE/InfoNCE step-time ratio.
4. *SimCSE loop*: the text training loop on CUDA (bf16 autocast) with MiniLM-L6's architecture
   and tokenizer, random weights (the 91 MB weights file does not travel), batch 64 and 512,
   max length 32; sentences/s. ``--minilm DIR`` names a folder with the model's config and
   tokenizer files.

    python benchmarks/gpu_check.py [--steps 60]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from infonce_lab.params import (
    DirectAUConfig,
    FixedSchedule,
    InfoNCEConfig,
    SimCLRAugmentConfig,
    TorchvisionResNetConfig,
    TrainingConfig,
    WeinceConfig,
)
from infonce_lab.pipeline.pretrain import train_image
from infonce_lab.pipeline.registry import build_loss

LOSSES = {"infonce": InfoNCEConfig(), "weince": WeinceConfig(), "directau": DirectAUConfig()}


def loss_parity(n: int = 512, d: int = 128, tau: float = 0.2) -> dict[str, dict[str, float]]:
    g = torch.Generator().manual_seed(0)
    a = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    b = torch.nn.functional.normalize(a + 0.5 * torch.randn(n, d, generator=g, dtype=torch.float64),
                                      dim=1)
    out = {}
    for name, cfg in LOSSES.items():
        res = {}
        for dev, dt in (("cpu", torch.float64), ("cuda", torch.float32)):
            z1 = a.to(dev, dt, copy=True).requires_grad_(True)
            z2 = b.to(dev, dt, copy=True).requires_grad_(True)
            loss, _ = build_loss(cfg)(z1, z2, tau)
            loss.backward()
            res[dev] = (float(loss.detach()), torch.cat([z1.grad, z2.grad]).double().cpu())
        (l64, g64), (l32, g32) = res["cpu"], res["cuda"]
        out[name] = {"loss_cpu_f64": l64, "loss_cuda_f32": l32,
                     "loss_rel_err": abs(l32 - l64) / abs(l64),
                     "grad_rel_err": float((g32 - g64).norm() / g64.norm())}
    return out


def loss_only_ms(batch: int, d: int = 128, reps: int = 50) -> dict[str, float]:
    out = {}
    for name, cfg in LOSSES.items():
        loss_fn = build_loss(cfg)
        z1 = torch.randn(batch, d, device="cuda")
        z2 = (z1 + 0.5 * torch.randn_like(z1))
        z1 = torch.nn.functional.normalize(z1, dim=1).requires_grad_(True)
        z2 = torch.nn.functional.normalize(z2, dim=1).requires_grad_(True)
        for _ in range(5):
            loss_fn(z1, z2, 0.2)[0].backward()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(reps):
            loss_fn(z1, z2, 0.2)[0].backward()
        end.record()
        torch.cuda.synchronize()
        out[f"{name}_ms"] = start.elapsed_time(end) / reps
    out["weince_over_infonce"] = out["weince_ms"] / out["infonce_ms"]
    return out


def train(loss, batch: int, steps: int, compile_: bool = False) -> dict[str, float]:  # noqa: ANN001
    n = batch * max(2, steps // 4)
    x = np.random.default_rng(0).integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    epochs = max(1, steps * batch // n)
    cfg = TrainingConfig(epochs=epochs, batch_size=batch, lr=3e-4, lr_schedule="constant",
                         warmup_epochs=0, log_every_steps=20, device="cuda", precision="bf16",
                         channels_last=True, compile=compile_)
    logs: list[dict[str, float]] = []
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    res = train_image(x, backbone=TorchvisionResNetConfig(depth=18), loss=loss,
                        schedule=FixedSchedule(tau=0.5), augment=SimCLRAugmentConfig(),
                        training=cfg, seed=0, on_log=lambda s, r: logs.append(r))
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    steady = [r["samples_per_s"] for r in logs[2:]] or [r["samples_per_s"] for r in logs]
    return {"steps": res.steps, "wall_s": wall, "final_loss": res.final_loss,
            "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30,
            # samples/s counts both views (2 × batch per step), as the telemetry does
            "views_per_s_median": float(np.median(steady)),
            "step_ms_median": 1e3 * 2 * batch / float(np.median(steady))}


def train_text(loss, batch: int, steps: int, folder: str) -> dict[str, float]:  # noqa: ANN001
    from infonce_lab.data.text_tokens import tokenise_sentences
    from infonce_lab.models.text import build_sentence_encoder, load_tokenizer
    from infonce_lab.params import TextTrainingConfig, TransformerEncoderConfig
    from infonce_lab.pipeline.text_pretrain import train_text

    enc_cfg = TransformerEncoderConfig(source=folder, pooling="mean", random_init=True)
    words = ["the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "park", "city", "river", "old", "new", "red", "blue"]
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(words, rng.integers(6, 30))) for _ in range(batch * steps)]
    cfg = TextTrainingConfig(max_steps=steps, batch_size=batch, log_every_steps=10, device="cuda")
    logs: list[dict[str, float]] = []
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tok = load_tokenizer(enc_cfg)
    res = train_text(tokenise_sentences(sentences, tok, cfg.max_length),
                                 encoder=build_sentence_encoder(enc_cfg, seed=0),
                                 tokenizer=tok, loss=loss,
                                 schedule=FixedSchedule(tau=0.05), training=cfg, seed=0,
                                 on_log=lambda s, r: logs.append(r))
    torch.cuda.synchronize()
    steady = [r["samples_per_s"] for r in logs[1:]] or [r["samples_per_s"] for r in logs]
    return {"steps": res.steps, "wall_s": time.perf_counter() - t0,
            "final_loss": res.final_loss, "sentence_views_per_s_median": float(np.median(steady))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--minilm", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check is for a GPU machine")
    dest = Path(os.environ.get("OUT", "reports")) / "gpu_check.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}

    def part(key: str, fn, *a, **kw) -> None:  # noqa: ANN001
        t0 = time.perf_counter()
        try:
            out[key] = fn(*a, **kw)
        except Exception as e:  # noqa: BLE001 -- record and go on: one failure must not hide the rest
            out[key] = {"error": f"{type(e).__name__}: {e}"}
        out.setdefault("part_seconds", {})[key] = time.perf_counter() - t0
        dest.write_text(json.dumps(out, indent=2))
        print(key, json.dumps(out[key]), flush=True)

    part("loss_parity", loss_parity)
    for b in (256, 1024):
        part(f"loss_only_b{b}", loss_only_ms, b)
    for b in (256, 512):
        part(f"train_infonce_b{b}", train, InfoNCEConfig(), b, args.steps)
        part(f"train_weince_b{b}", train, WeinceConfig(), b, args.steps)
        i, w = out[f"train_infonce_b{b}"], out[f"train_weince_b{b}"]
        if "step_ms_median" in i and "step_ms_median" in w:
            out[f"weince_over_infonce_step_time_b{b}"] = w["step_ms_median"] / i["step_ms_median"]
    if args.minilm:
        for b in (64, 512):
            part(f"simcse_infonce_b{b}", train_text, InfoNCEConfig(), b, 30, args.minilm)
            part(f"simcse_weince_b{b}", train_text, WeinceConfig(), b, 30, args.minilm)
    part("train_infonce_b512_compiled", train, InfoNCEConfig(), 512, args.steps, True)
    dest.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
