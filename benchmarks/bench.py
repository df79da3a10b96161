"""`make bench`: speed figures measured in one run, reported as ratios side by side (machines are
noisy: what is compared is timed in the same run, interleaved where it can be).

    python benchmarks/bench.py [--out reports/bench.json] [--quick]
    python benchmarks/bench.py --doc      # docs/benchmarks.md from reports/bench.json

Each ``bench_<section>`` says in its docstring what it measures; ``SECTIONS`` lists them with
their full and quick sizes. ``--quick`` runs every section at tiny sizes: the test suite's check
that the bench works in a fresh clone; its figures measure nothing. The committed
``reports/bench.json`` is the reference run that docs/benchmarks.md (``--doc``) and every figure
quoted in the docs are read from.
"""

from __future__ import annotations

import argparse
import copy
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from infonce_lab.data.views import make_views
from infonce_lab.evaluation.knn import topk_cosine
from infonce_lab.io import write_json_atomic, write_text_atomic
from infonce_lab.models import build_encoder
from infonce_lab.params import InfoNCEConfig, ResNetConfig, WeinceConfig
from infonce_lab.pipeline.registry import build_loss

# The losses as training builds them, at the schema's defaults (the math has no defaults).
INFONCE, WEINCE = build_loss(InfoNCEConfig()), build_loss(WeinceConfig())


def median_seconds(fn: Callable[[], object], repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_training(rounds: int, epochs: int, n_images: int | None = None, processes: int = 1
                   ) -> dict[str, float]:
    """The default study's training step as pretraining runs it — ``train_image``: the loop, its
    hooks and telemetry, two augmented views, the encoder, the loss at the schedule's τ, backward,
    the optimizer — on the study's own backbone, data, augmentation and training section
    (params.yaml), for its InfoNCE and WEINCE entries, against the same backbone's bare forward and
    backward of the batch the step feeds it (the training source's two views, in its memory
    layout). Interleaved round by round (the InfoNCE run, the WEINCE run, the bare passes); each
    run's seconds are its loop's (building excluded), per step; the figures are medians over
    rounds. Target: each loss's step ≤ 1.15× the bare pass. Beside the bare pass, the same pass
    with the encoder and batch channels-last, a layout the CPU loop does not use: its convolution
    kernels are faster here but round differently, so the study's weights would change (a
    one-channel array read as it is on disk can pass for channels-last and take that route
    unasked, which is why the bare pass is timed on the step's own batch). The step's parts beyond
    the bare pass, each timed on its own (medians): the two views, each loss's forward and backward
    on the batch's embeddings, one logged step's telemetry (every ``training.log_every_steps``-th
    step), the optimizer's step as training takes it (and, beside it, torch's fused kernel: its
    rounding differs from the per-tensor update, so the study's weights would change). Each
    loss's floor is the bare pass plus its views, its loss and the optimizer's step, over the
    bare pass: a step with no telemetry and no loop around it costs at least that, so a target
    below the floor needs a different step, not a leaner loop. The convolutions' speed can differ
    from one process to the next (both passes alike), which moves the ratios, so ``processes``
    fresh processes each time all of it and every figure is their median, with each step ratio's
    lowest and highest beside it."""
    if processes > 1:
        runs = [_in_child(bench_training, rounds=rounds, epochs=epochs, n_images=n_images)
                for _ in range(processes)]
        out = {k: statistics.median(r[k] for r in runs) if isinstance(v, float) else v
               for k, v in runs[0].items()}
        for lo in ("infonce", "weince"):
            ratios = [r[f"{lo}_step_over_bare_fwd_bwd"] for r in runs]
            out[f"{lo}_step_over_bare_lowest"] = min(ratios)
            out[f"{lo}_step_over_bare_highest"] = max(ratios)
        return out | {"processes": processes}
    from infonce_lab.data.readers import READERS
    from infonce_lab.models.build import init_encoder
    from infonce_lab.params import load_params
    from infonce_lab.pipeline.pretrain import train_image
    from infonce_lab.train.image_source import ImageViews

    params = load_params(Path(__file__).resolve().parents[1] / "params.yaml")
    name = params.study.datasets[0]
    ds = params.datasets[name]
    x = READERS[ds.kind].read(ds, Path("data/downloads")).pretrain_x()[:n_images]
    training = params.training.model_copy(update={"epochs": epochs, "warmup_epochs": 0,
                                                  "checkpoint_epochs": []})
    backbone = params.backbones[params.study.backbones[0]]
    schedule = params.schedules[params.study.schedules[0]]
    losses = {lo: params.losses[lo] for lo in ("infonce", "weince")}
    batch = training.batch_size
    enc = init_encoder(backbone, x.shape[1], 0, x.shape[-1])
    views = ImageViews(x, ds.augment, torch.device("cpu"), 0).inputs(torch.arange(batch))
    enc_cl = copy.deepcopy(enc).to(memory_format=torch.channels_last)
    views_cl = views.contiguous(memory_format=torch.channels_last)
    steps = epochs * (len(x) // batch)

    def bare(net: torch.nn.Module = enc, batch_views: torch.Tensor = views) -> float:
        t0 = time.perf_counter()
        for _ in range(steps):
            _, z = net(batch_views)
            z.sum().backward()
            net.zero_grad(set_to_none=True)
        return (time.perf_counter() - t0) / steps

    def run(loss: str) -> float:
        res = train_image(x, backbone=backbone, loss=losses[loss], schedule=schedule,
                          augment=ds.augment, training=training, seed=0)
        return res.seconds / res.steps

    per: dict[str, list[float]] = {"infonce": [], "weince": [], "bare": [], "bare_cl": []}
    run("infonce"), run("weince"), bare(), bare(enc_cl, views_cl)  # warm-up: first-call costs
    for _ in range(rounds):
        for loss in ("infonce", "weince"):
            per[loss].append(run(loss))
        per["bare"].append(bare())
        per["bare_cl"].append(bare(enc_cl, views_cl))
    med = {k: statistics.median(v) for k, v in per.items()}
    out = {"dataset": name, "backbone": params.study.backbones[0], "batch_size": batch,
           "steps_per_run": steps, "bare_fwd_bwd_ms": 1e3 * med["bare"],
           "bare_fwd_bwd_channels_last_ms": 1e3 * med["bare_cl"],
           "infonce_step_ms": 1e3 * med["infonce"], "weince_step_ms": 1e3 * med["weince"],
           "infonce_step_over_bare_fwd_bwd": med["infonce"] / med["bare"],
           "weince_step_over_bare_fwd_bwd": med["weince"] / med["bare"]}
    out |= _step_parts(enc, x[:batch], ds.augment, losses, schedule, training, rounds)
    fixed = out["views_ms"] + out["optimizer_step_ms"]
    for lo in losses:
        out[f"{lo}_floor_over_bare_fwd_bwd"] = 1 + (fixed + out[f"{lo}_fwd_bwd_ms"]) / out[
            "bare_fwd_bwd_ms"]
    return out


def _in_child(fn: Callable[..., dict[str, object]], **kw: object) -> dict[str, object]:
    """``fn(**kw)`` in a fresh interpreter with this one's torch threads (its JSON result)."""
    import json

    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import torch; torch.set_num_threads({torch.get_num_threads()}); import bench; "
            f"print(json.dumps(bench.{fn.__name__}(**{kw!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{fn.__name__}{kw} failed in its own process:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _step_parts(enc: torch.nn.Module, x: np.ndarray, augment: object, losses: dict[str, object],
                schedule: object, training: object, repeats: int) -> dict[str, float]:
    """The parts of a training step beyond the bare pass, each timed on its own (ms)."""
    from infonce_lab.losses.telemetry import step_record
    from infonce_lab.pipeline.registry import build_loss, build_schedule
    from infonce_lab.train.optim import build_optimizer

    gen = torch.Generator().manual_seed(0)
    images = torch.from_numpy(np.ascontiguousarray(x)).float()
    tau = build_schedule(schedule, 1).tau(0)
    _, z = enc(torch.cat(make_views(images, augment, gen)))
    z1, z2 = (v.detach().requires_grad_() for v in z.chunk(2))
    out = {"views_ms": 1e3 * median_seconds(lambda: make_views(images, augment, gen), repeats)}
    for name, cfg in losses.items():
        loss_fn = build_loss(cfg)
        out[f"{name}_fwd_bwd_ms"] = 1e3 * median_seconds(
            lambda f=loss_fn: f(z1, z2, tau)[0].backward(), repeats)
        stats = loss_fn(z1, z2, tau)[1]
        out[f"{name}_telemetry_ms_per_logged_step"] = 1e3 * median_seconds(
            lambda s=stats: step_record(z1, z2, s, loss=0.0, lr=0.0, epoch=0.0,
                                        samples_per_s=0.0, tau=tau), repeats)
    enc.zero_grad(set_to_none=True)
    z.sum().backward()
    opt = build_optimizer(training.optimizer, enc, training.lr, training.weight_decay,
                          training.momentum, exclude_bias_and_norm=training.exclude_bias_and_norm)
    out["optimizer_step_ms"] = 1e3 * median_seconds(opt.step, repeats)
    if training.optimizer in ("adam", "adamw"):   # torch fuses these two only
        fused = build_optimizer(training.optimizer, enc, training.lr, training.weight_decay,
                                fused=True)
        out["optimizer_step_fused_ms"] = 1e3 * median_seconds(fused.step, repeats)
    out["log_every_steps"] = training.log_every_steps
    return out


def bench_deterministic_fill(batch: int = 256, rounds: int = 5, steps: int = 5) -> dict[str, float]:
    """The digits step under torch's deterministic mode with and without its NaN fill of every
    new tensor, interleaved round by round: the ratio of the medians is the fill's cost. Training
    keeps torch's default (the fill on): a kernel that reads memory it never wrote then gives
    NaN every time instead of a different number each run."""
    torch.manual_seed(0)
    enc = build_encoder(ResNetConfig(), in_channels=1)
    opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
    v = torch.rand(2 * batch, 1, 8, 8)
    torch.use_deterministic_algorithms(True, warn_only=True)

    def steps_with(fill: bool) -> float:
        torch.utils.deterministic.fill_uninitialized_memory = fill
        t0 = time.perf_counter()
        for _ in range(steps):
            _, z = enc(v)
            loss, _ = INFONCE(*z.chunk(2), 0.2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return (time.perf_counter() - t0) / steps

    steps_with(True), steps_with(False)  # warm-up
    on, off = [], []
    for _ in range(rounds):
        on.append(steps_with(True))
        off.append(steps_with(False))
    torch.use_deterministic_algorithms(False)
    return {"step_ms_fill_on": 1e3 * statistics.median(on),
            "step_ms_fill_off": 1e3 * statistics.median(off),
            "fill_on_over_off": statistics.median(on) / statistics.median(off)}


def bench_training_resnet18(batch: int, repeats: int, gpu_batch: int = 256,
                            gpu_repeats: int = 10) -> dict[str, float]:
    """The paper's step — CIFAR-shaped uint8 data on the device, SimCLR's two views made there,
    torchvision ResNet-18 with the CIFAR stem, InfoNCE, Adam — against ResNet-18's bare
    forward+backward on the same views (the overhead of data, augmentation, loss and optimizer;
    target ≤ 15%). On the GPU when there is one (bf16, channels_last, ``gpu_batch``)."""
    from infonce_lab.data.views import make_views
    from infonce_lab.params import SimCLRAugmentConfig, TorchvisionResNetConfig

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cuda":
        batch, repeats = gpu_batch, gpu_repeats
    torch.manual_seed(0)
    enc = build_encoder(TorchvisionResNetConfig(depth=18), in_channels=3, image_size=32).to(dev)
    cuda = dev.type == "cuda"
    fmt = torch.channels_last if cuda else torch.contiguous_format
    enc = enc.to(memory_format=fmt)
    opt = torch.optim.Adam(enc.parameters(), lr=3e-4)
    gen = torch.Generator(device=dev).manual_seed(0)
    data = torch.randint(0, 256, (8 * batch, 3, 32, 32), dtype=torch.uint8, device=dev)
    aug = SimCLRAugmentConfig()
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cuda)
    v = torch.cat(make_views(data[:batch], aug, gen)).contiguous(memory_format=fmt)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def bare() -> None:
        with autocast:
            _, z = enc(v)
        z.float().sum().backward()
        enc.zero_grad(set_to_none=True)
        sync()

    def step() -> None:
        idx = torch.randint(0, len(data), (batch,), generator=gen, device=dev)
        a, b = make_views(data[idx], aug, gen)
        with autocast:
            _, z = enc(torch.cat([a, b]).contiguous(memory_format=fmt))
        loss, _ = INFONCE(*z.float().chunk(2), 0.5)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync()

    t_bare, t_step = median_seconds(bare, repeats), median_seconds(step, repeats)
    t_aug = median_seconds(lambda: (make_views(data[:batch], aug, gen), sync()), repeats)
    return {"device": str(dev), "batch_size": batch, "bare_fwd_bwd_ms": 1e3 * t_bare,
            "train_step_ms": 1e3 * t_step, "train_step_over_bare_fwd_bwd": t_step / t_bare,
            "augment_two_views_ms": 1e3 * t_aug, "train_samples_per_s": batch / t_step}


def bench_losses(repeats: int, shapes: tuple[tuple[int, int], ...] = ((512, 64), (512, 128),
                                                                     (4096, 128))
                 ) -> list[dict[str, float]]:
    """Loss-stage time (forward + backward from the embeddings) of WEINCE against InfoNCE at
    2N = 512 (d = 64, 128) and 2N = 4096 (d = 128). Our InfoNCE is one matmul and a masked
    cross-entropy; it is not slowed to flatter the ratio."""
    rows = []
    for two_n, d in shapes:
        g = torch.Generator().manual_seed(0)
        z1 = torch.randn(two_n // 2, d, generator=g, requires_grad=True)
        z2 = torch.randn(two_n // 2, d, generator=g, requires_grad=True)

        def run(fn, z1=z1, z2=z2) -> None:  # noqa: ANN001
            loss, _ = fn(z1, z2, 0.5)
            loss.backward()

        reps = repeats * 3 if two_n <= 512 else max(3, repeats // 2)
        t_i = median_seconds(lambda: run(INFONCE), reps)
        t_w = median_seconds(lambda: run(WEINCE), reps)
        rows.append({"two_n": two_n, "dim": d, "infonce_ms": 1e3 * t_i, "weince_ms": 1e3 * t_w,
                     "weince_over_infonce": t_w / t_i})
    return rows


def _xi_grid_fit(y: np.ndarray) -> float:
    """The WEINCE notebook's route, for the ratio: σ̂(ξ) by Newton on a 400-point ξ grid over
    [−1.5, 1] (ξ ≤ −1 excluded: no MLE there), then 400 points around the best."""
    from infonce_lab.tails import gpd_loglik, profile_sigma

    def best(grid: np.ndarray) -> float:
        grid = grid[grid > -1.0]
        return float(grid[np.argmax(gpd_loglik(y, grid, profile_sigma(y, grid)))])

    coarse = best(np.linspace(-1.5, 1.0, 400))
    step = 2.5 / 399
    return best(np.linspace(coarse - 2 * step, coarse + 2 * step, 400))


def bench_tails(exceedances: int = 20_000, batches: int = 12, anchors: int = 256,
                lrt_replicates: int = 39) -> dict[str, float]:
    """The GPD profile-likelihood fit at 20k exceedances against the WEINCE notebook's ξ-grid
    route (and one bootstrap replicate at 5k); one H1 link fit by Newton against L-BFGS-B; the
    link test on a digits-sized bank (12 batches × 256 anchors × 255 candidates) with CV and with
    the LRT (39 replicates) — the budget figures of the diagnose stage."""
    from scipy import stats

    from infonce_lab.tails import bootstrap_xi, fit_gpd, fit_link, link_test

    y = stats.genpareto.rvs(c=-0.3, scale=0.05, size=exceedances,
                            random_state=np.random.default_rng(0))
    t_fit = median_seconds(lambda: fit_gpd(y), 3, warmup=1)
    t_grid = median_seconds(lambda: _xi_grid_fit(y), 1, warmup=0)
    t_boot = median_seconds(lambda: bootstrap_xi(y[:5000], replicates=20), 3, warmup=1) / 20
    rng = np.random.default_rng(0)
    a = rng.normal(size=(batches * anchors, 1, 16))
    c = (rng.uniform(0, 3, size=(a.shape[0], anchors - 1, 1)) * a
         + rng.normal(size=(a.shape[0], anchors - 1, 16)))
    s = ((a / np.linalg.norm(a, axis=2, keepdims=True))
         * (c / np.linalg.norm(c, axis=2, keepdims=True))).sum(2)
    batch = np.repeat(np.arange(batches), anchors)
    half = s[: batches // 2 * anchors]
    t_newton = median_seconds(lambda: fit_link(half, optimizer="newton"), 3, warmup=1)
    t_lbfgs = median_seconds(lambda: fit_link(half, optimizer="lbfgs"), 3, warmup=1)
    t_link = median_seconds(lambda: link_test(s, batch, lrt_replicates=0, cv_folds=5), 1, warmup=0)
    t_lrt = median_seconds(lambda: link_test(s, batch, lrt_replicates=lrt_replicates,
                                             cv_folds=0), 1, warmup=0)
    return {"gpd_fit_20k_s": t_fit, "gpd_xi_grid_route_20k_s": t_grid,
            "gpd_xi_grid_over_profile_theta": t_grid / t_fit,
            "gpd_bootstrap_replicate_5k_s": t_boot,
            "link_fit_h1_newton_s": t_newton, "link_fit_h1_lbfgs_s": t_lbfgs,
            "link_lbfgs_over_newton": t_lbfgs / t_newton,
            "link_test_cv5_s": t_link, "link_test_lrt39_s": t_lrt}


def bench_sims(chains: int = 2000, steps: int = 500) -> dict[str, float]:
    """Chain-steps per second of the Langevin simulator: S0 (one particle on S¹) and S1 (four
    particles on S¹ under the InfoNCE gradient), one schedule, P2, projected scheme."""
    from infonce_lab.schedules import LogAnneal
    from infonce_lab.simulation.double_well import double_well_loss_grad, double_well_trap_start
    from infonce_lab.simulation.landscape import (
        S1_PAIRS,
        S1_TRAP_ANGLES,
        infonce_grad,
        s1_angles_to_z,
    )
    from infonce_lab.simulation.langevin import langevin

    rng = np.random.default_rng(0)
    sched = LogAnneal(c=0.5, K=float(np.e), time_per_step=1e-2, tau_max=1e6)
    z_s0 = double_well_trap_start(chains, 0.05, rng)
    z_s1 = s1_angles_to_z(np.asarray(S1_TRAP_ANGLES)[None] + 0.05 * rng.standard_normal((chains, 4)))
    t_s0 = median_seconds(lambda: langevin(double_well_loss_grad, z_s0, sched, steps, 1e-2, rng=1), 3, warmup=1)
    t_s1 = median_seconds(lambda: langevin(lambda z, b: infonce_grad(z, S1_PAIRS, b), z_s1, sched,
                                           steps, 1e-2, rng=1), 3, warmup=1)
    return {"chains": chains, "steps": steps, "s0_chain_steps_per_s": chains * steps / t_s0,
            "s1_chain_steps_per_s": chains * steps / t_s1}


def bench_augment(batch: int = 512, size: int = 32, rounds: int = 5) -> dict[str, float]:
    """SimCLR's two views of a CIFAR-shaped uint8 batch: ours (data/simclr_augment.py, the whole
    batch at once) against torchvision's v2 pipeline with the same parameters applied image by
    image — both on one thread (torchvision's fastest setting for small images; a data loader
    would give each worker one), rounds interleaved, medians."""
    import torchvision.transforms.v2 as T

    from infonce_lab.data.simclr_augment import SimCLRAugment, simclr_augment, to_float

    x8 = torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8,
                       generator=torch.Generator().manual_seed(0))
    cfg, gen = SimCLRAugment(size), torch.Generator().manual_seed(0)
    tv = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(),
                    T.RandomApply([T.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8),
                    T.RandomGrayscale(0.2)])
    images = to_float(torch.cat([x8, x8]))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ours, theirs = [], []
        for i in range(rounds + 1):  # the first round warms both up and is not counted
            t0 = time.perf_counter()
            simclr_augment(x8, cfg, gen), simclr_augment(x8, cfg, gen)
            t1 = time.perf_counter()
            [tv(img) for img in images]
            t2 = time.perf_counter()
            if i:
                ours.append(t1 - t0)
                theirs.append(t2 - t1)
    finally:
        torch.set_num_threads(threads)
    t_ours, t_tv = statistics.median(ours), statistics.median(theirs)
    return {"batch": batch, "size": size, "ours_two_views_ms": 1e3 * t_ours,
            "torchvision_per_image_ms": 1e3 * t_tv, "torchvision_over_ours": t_tv / t_ours}


def bench_knn(n_bank: int, n_query: int, dim: int, k: int) -> dict[str, float]:
    """scikit-learn's ``NearestNeighbors`` (cosine, brute force) against our chunked top-k
    (evaluation/knn.py), and how often the two agree on the neighbours."""
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(0)
    bank = rng.normal(size=(n_bank, dim)).astype(np.float32)
    q = rng.normal(size=(n_query, dim)).astype(np.float32)
    tb, tq = torch.as_tensor(bank), torch.as_tensor(q)
    t_ours = median_seconds(lambda: topk_cosine(tb, tq, k), 3, warmup=1)
    nn = NearestNeighbors(n_neighbors=k, metric="cosine", algorithm="brute").fit(bank)
    t_sk = median_seconds(lambda: nn.kneighbors(q), 3, warmup=1)
    _, ours = topk_cosine(tb, tq, k)
    _, ref = nn.kneighbors(q)
    agree = float(np.mean(np.sort(ours.numpy(), 1) == np.sort(ref, 1)))
    return {"bank": n_bank, "queries": n_query, "dim": dim, "k": k, "ours_s": t_ours,
            "sklearn_s": t_sk, "knn_sklearn_over_ours": t_sk / t_ours,
            "neighbour_agreement": agree}


def _wall(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    """Seconds, and the finished process; a failure is an error in the command's own words."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return seconds, proc


def bench_pipeline(rounds: int = 3) -> dict[str, float | int | str | None]:
    """The default study's fixed cost. From the last full run's reports/timings/ (as the
    report's provenance computes them): stage work, first start to last end, the fixed fraction
    1 − work / wall (target ≤ 0.15), the median gap DVC leaves between stages and the median
    interpreter start-up per stage. Measured here, interleaved: `dvc status` and `dvc repro
    --dry --allow-missing` (a no-op repro's checks, never running a stage; target ≤ 5 s each),
    how many stages are not up to date, and a stage's start-up (`stages/noise_floor.py --help`:
    Python, typer, the params schema) against a bare `python -c pass`."""
    import datetime as dt
    import json
    import shutil

    from infonce_lab.params import load_params
    from infonce_lab.report.render import stage_timings

    names = load_params("params.yaml").stage_names()
    t = stage_timings(Path("reports/timings"), names)
    out: dict[str, float | int | str | None] = {
        "stages": len(t["stages"]), "stage_work_s": t["stages_total"]["seconds"],
        "wall_s": t["stages_total"].get("wall_seconds"),
        "fixed_fraction": t["stages_total"].get("fixed_fraction")}
    def end(st: dict) -> float:
        return dt.datetime.fromisoformat(st["finished"].replace("Z", "+00:00")).timestamp()

    done = sorted((st for st in t["stages"] if st.get("finished")), key=end)
    # between two stages: the later one's end − the earlier one's end − the later one's process
    gaps = [end(b) - end(a) - b["process_seconds"] for a, b in zip(done, done[1:], strict=False)
            if b.get("process_seconds")]
    starts = [st["process_seconds"] - st["seconds"] for st in t["stages"]
              if st.get("process_seconds")]
    out["dvc_between_stages_median_s"] = statistics.median(gaps) if gaps else None
    out["startup_per_stage_median_s"] = statistics.median(starts) if starts else None
    dvc = shutil.which("dvc")
    py = sys.executable
    times: dict[str, list[float]] = {"dvc_status": [], "dvc_repro_dry": [], "stage_startup": [],
                                     "python_bare": []}
    for _ in range(rounds):  # interleaved: the machine's noise hits every command alike
        if dvc:
            # Stages to run (in a fresh clone, every one whose outputs are not pulled) are a
            # state of the workspace, not an error: `dvc status --json` names them and exits 0,
            # and `--allow-missing` lets the dry run pass over missing data as a pulled
            # workspace would (plain `--dry` stops at the first stage whose deps are absent).
            seconds, status = _wall([dvc, "status", "--json"])
            times["dvc_status"].append(seconds)
            # A stage whose code changed since dvc.lock, with its input data not yet downloaded
            # (a clone with edited code), stops even the dry run: that is the workspace's state,
            # recorded as such, not a failed benchmark.
            if "dvc_repro_dry_skipped" not in out:
                try:
                    times["dvc_repro_dry"].append(
                        _wall([dvc, "repro", "--dry", "--allow-missing"])[0])
                except RuntimeError as err:
                    out["dvc_repro_dry_skipped"] = str(err).splitlines()[-1][:300]
        times["stage_startup"].append(_wall([py, "stages/noise_floor.py", "--help"])[0])
        times["python_bare"].append(_wall([py, "-c", "pass"])[0])
    if dvc:
        out["stages_not_up_to_date"] = len(json.loads(status.stdout or "{}"))
    for k, v in times.items():
        out[f"{k}_s"] = statistics.median(v) if v else None
    if times["python_bare"]:
        out["stage_startup_over_bare_python"] = (statistics.median(times["stage_startup"])
                                                 / statistics.median(times["python_bare"]))
    return out


def bench_outputs(rounds: int = 15, files: int = 40) -> dict[str, float]:
    """A stage's outputs (a folder of ``files`` JSON records and two JSON files) replaced together
    (io.replaced_together: staged, fsynced, journaled, renamed) against writing the same files
    in place with no temporary, fsync or journal — what a kill could leave half-written. Rounds
    interleaved; medians. And the params-time memory check beside the validation it follows."""
    import json
    import os
    import shutil
    import tempfile

    from infonce_lab.io import replaced_together
    from infonce_lab.params import load_params
    from infonce_lab.params.footprint import check_memory

    record = {"metric": list(range(200)), "name": "run"}
    root = Path(tempfile.mkdtemp(prefix="bench-outputs-"))
    cwd = os.getcwd()
    times: dict[str, list[float]] = {"together": [], "in_place": []}
    try:
        os.chdir(root)
        for _ in range(rounds):
            t0 = time.perf_counter()
            with replaced_together("bench") as out:
                d = out.dir(Path("reports/runs"))
                for i in range(files):
                    (d / f"{i}.json").write_text(json.dumps(record))
                out.json(Path("reports/summary.json"), record)
                out.json(Path("reports/headline.json"), record)
            times["together"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            plain = Path("plain/runs")
            plain.mkdir(parents=True, exist_ok=True)
            for i in range(files):
                (plain / f"{i}.json").write_text(json.dumps(record))
            Path("plain/summary.json").write_text(json.dumps(record))
            Path("plain/headline.json").write_text(json.dumps(record))
            times["in_place"].append(time.perf_counter() - t0)
    finally:
        os.chdir(cwd)
        shutil.rmtree(root, ignore_errors=True)
    params = load_params("params.yaml")
    t_load = median_seconds(lambda: load_params("params.yaml"), 10)
    t_mem = median_seconds(lambda: check_memory(params), 10)
    together, in_place = statistics.median(times["together"]), statistics.median(times["in_place"])
    return {"together_ms": together * 1e3, "in_place_ms": in_place * 1e3,
            "together_over_in_place": together / in_place,
            "memory_check_ms": t_mem * 1e3, "memory_check_over_validation": t_mem / t_load}


def bench_rank_views(world: int = 4, batch: int = 256, rounds: int = 15) -> dict[str, float]:
    """One DDP rank's views of its batch/world rows: drawn for the whole global batch and sliced
    (data/batch_part.BatchPart, what training does) against drawn for its own rows alone (what it did,
    which repeated rank 0's draws on every rank). CIFAR-shaped SimCLR views and the digits'
    affine + noise views; rounds interleaved, medians."""
    from infonce_lab.data.batch_part import BatchPart
    from infonce_lab.data.views import make_views
    from infonce_lab.params import DigitsAugment, SimCLRAugmentConfig

    out: dict[str, float] = {}
    cases = {"simclr": (SimCLRAugmentConfig(), (batch // world, 3, 32, 32)),
             "digits": (DigitsAugment(noise_std=0.05, erase_prob=0.5), (batch // world, 1, 8, 8))}
    for name, (cfg, shape) in cases.items():
        x = torch.randint(0, 256, shape, dtype=torch.uint8)
        gen = torch.Generator().manual_seed(0)
        part = BatchPart(batch // world, batch)
        times: dict[str, list[float]] = {"part": [], "own": []}
        for _ in range(rounds):
            for key, arg in (("part", part), ("own", None)):
                t0 = time.perf_counter()
                make_views(x, cfg, gen, arg)
                times[key].append(time.perf_counter() - t0)
        t_part, t_own = statistics.median(times["part"]), statistics.median(times["own"])
        out |= {f"{name}_part_ms": t_part * 1e3, f"{name}_own_ms": t_own * 1e3,
                f"{name}_part_over_own": t_part / t_own}
    return out


def bench_hub_verify(mb: int = 200) -> dict[str, float]:
    """verify_hub_snapshot on a snapshot of one ``mb``-MB LFS blob (SHA-256) and a 1-MB git blob
    (SHA-1), against reading the same bytes: the check's cost per stage is hashing, once."""
    import hashlib
    import os
    import shutil
    import tempfile

    from huggingface_hub.utils.sha import git_hash

    from infonce_lab.data import fetch

    root = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    try:
        weights, vocab = os.urandom(mb << 20), os.urandom(1 << 20)
        snap = root / "snapshots" / ("0" * 40)
        snap.mkdir(parents=True)
        for name, data, digest in (("model.safetensors", weights,
                                    hashlib.sha256(weights).hexdigest()),
                                   ("vocab.txt", vocab, git_hash(vocab))):
            (root / digest).write_bytes(data)
            (snap / name).symlink_to(root / digest)

        def verify() -> None:
            fetch._VERIFIED.clear()   # measure the hashing, not the per-process memo
            fetch.verify_hub_snapshot(snap)

        def read() -> None:
            for f in snap.iterdir():
                f.read_bytes()

        t_verify, t_read = median_seconds(verify, 5, 1), median_seconds(read, 5, 1)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"verify_s_per_gb": t_verify / (mb / 1024), "read_s_per_gb": t_read / (mb / 1024),
            "verify_over_read": t_verify / t_read}


def bench_fetch(mb: int = 100, rounds: int = 5) -> dict[str, float]:
    """fetch() of an ``mb``-MB file from a local http.server (read1 with the rate floor, hashed,
    written, renamed) against the previous route (resp.read of whole 1-MiB blocks, hashed,
    written), interleaved. Loopback is far faster than any download link, so the ratio bounds
    the floor's cost from above."""
    import functools
    import http.server
    import os
    import shutil
    import tempfile
    import threading
    import urllib.request

    from infonce_lab.data import fetch

    root = Path(tempfile.mkdtemp(prefix="bench-fetch-"))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (root / "blob.bin").write_bytes(os.urandom(mb << 20))
        url = f"http://127.0.0.1:{server.server_address[1]}/blob.bin"
        dest = root / "out" / "blob.bin"

        def new() -> None:
            dest.unlink(missing_ok=True)
            fetch.fetch(url, dest, None, timeout_s=20.0)

        def old() -> None:
            with urllib.request.urlopen(url, timeout=20.0) as resp, \
                    open(root / "old.bin", "wb") as fh:
                fetch._copy_digests(resp.read, fh.write, None)

        t_new, t_old = [], []
        for _ in range(rounds):
            for fn, out in ((new, t_new), (old, t_old)):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)
    med_new, med_old = float(np.median(t_new)), float(np.median(t_old))
    return {"fetch_mb_per_s": mb / med_new, "plain_read_mb_per_s": mb / med_old,
            "fetch_over_plain": med_new / med_old}


# Each section: its function, its arguments for `make bench`, and for --quick (every code path at
# sizes that take seconds: what the test suite runs in a fresh clone; its figures mean nothing).
SECTIONS: dict[str, tuple[Callable[..., object], dict[str, object], dict[str, object]]] = {
    "training": (bench_training, {"rounds": 7, "epochs": 2, "processes": 3},
                 {"rounds": 1, "epochs": 1, "n_images": 512, "processes": 2}),
    "deterministic_fill": (bench_deterministic_fill, {},
                           {"batch": 16, "rounds": 1, "steps": 1}),
    "training_resnet18": (bench_training_resnet18, {"batch": 32, "repeats": 3},
                          {"batch": 2, "repeats": 1, "gpu_batch": 8, "gpu_repeats": 1}),
    "augment": (bench_augment, {}, {"batch": 8, "size": 16, "rounds": 1}),
    "knn": (bench_knn, {"n_bank": 20_000, "n_query": 5_000, "dim": 128, "k": 50},
            {"n_bank": 500, "n_query": 100, "dim": 16, "k": 5}),
    "losses": (bench_losses, {"repeats": 10}, {"repeats": 1, "shapes": ((64, 16),)}),
    "tails": (bench_tails, {}, {"exceedances": 2_000, "batches": 10, "anchors": 16,
                                "lrt_replicates": 1}),
    "sims": (bench_sims, {}, {"chains": 20, "steps": 10}),
    "pipeline": (bench_pipeline, {}, {"rounds": 1}),
    "outputs": (bench_outputs, {}, {"rounds": 1, "files": 3}),
    "rank_views": (bench_rank_views, {}, {"rounds": 1}),
    "hub_verify": (bench_hub_verify, {}, {"mb": 2}),
    "fetch": (bench_fetch, {}, {"mb": 2, "rounds": 1}),
}


DOC = Path("docs/benchmarks.md")


def figure(value: object) -> str:
    """A figure as the docs quote it: ratios and times to 3 significant digits, counts whole."""
    if isinstance(value, bool) or not isinstance(value, float):
        return "—" if value is None else str(value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def doc_page(bench: dict[str, object]) -> str:
    """docs/benchmarks.md: each section's docstring and its figures from ``bench``."""
    machine = bench["machine"]
    assert isinstance(machine, dict)
    out = ["# Benchmarks", "",
           "`make bench` writes `reports/bench.json`: each section below times what it compares "
           "side by side in one run. This page is generated from the committed reference run by "
           "`python benchmarks/bench.py --doc`; a test fails when it, or a figure the other pages "
           f"quote, lags that file. Reference machine: {machine['platform']}, "
           f"{machine['threads']} torch threads, torch {machine['torch']}.", ""]
    for name, (fn, _, _) in SECTIONS.items():
        if name not in bench:
            continue
        doc = " ".join((fn.__doc__ or "").split())
        out += [f"## {name}", "", doc, ""] if doc else [f"## {name}", ""]
        rows = bench[name] if isinstance(bench[name], list) else [bench[name]]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        if len(rows) == 1:
            out += ["| figure | value |", "|---|---|"]
            out += [f"| `{k}` | {figure(rows[0][k])} |" for k in keys]
        else:
            out += ["| " + " | ".join(f"`{k}`" for k in keys) + " |",
                    "|" + "---|" * len(keys)]
            out += ["| " + " | ".join(figure(r.get(k)) for k in keys) + " |" for r in rows]
        out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("reports/bench.json"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true",
                    help="every section at tiny sizes: checks that the bench runs, measures nothing")
    ap.add_argument("--doc", action="store_true",
                    help=f"write {DOC} from --out (a full run's file) and exit")
    args = ap.parse_args()
    if args.doc:
        import json

        bench = json.loads(args.out.read_text())
        if bench["machine"].get("quick"):
            raise SystemExit(f"{args.out}: a --quick run measures nothing; run `make bench` first")
        write_text_atomic(DOC, doc_page(bench))
        print(f"wrote {DOC} from {args.out}")
        return
    torch.set_num_threads(args.threads)
    result: dict[str, object] = {
        "machine": {"platform": platform.platform(), "threads": args.threads,
                    "torch": torch.__version__, "quick": args.quick}}
    for name, (fn, full, quick) in SECTIONS.items():
        result[name] = fn(**(quick if args.quick else full))
    write_json_atomic(args.out, result)
    for name in SECTIONS:
        for row in result[name] if isinstance(result[name], list) else [result[name]]:
            print(name, {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})


if __name__ == "__main__":
    main()
