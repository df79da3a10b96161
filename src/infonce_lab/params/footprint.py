"""Memory a study needs, estimated from params alone, held against this machine before compute.

Each estimate is the closed form of the largest arrays one stage allocates — the terms that grow
as a product or a power of params values (a B×B similarity matrix, a grid³ label volume, the
link test's per-pair arrays) — with its coefficient measured on this code at two sizes (the
allocation sites are named beside each). Constant and linear terms are left out, so each is
close to the peak for sizes that matter and a lower bound otherwise. A params file whose
estimate exceeds the machine is refused with the dotted key, its value and the estimate, before
anything is allocated (``check_memory``): the alternative is an allocation of 36 TB ending in a
traceback, or a swap storm.

The trained encoders' activations are not here: they depend on the architecture, and
``models.footprint`` measures them by a forward pass on the ``meta`` device in the pretrain stage.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from infonce_lab.params.base import ConfigError
from infonce_lab.params.data import DATASET_KINDS
from infonce_lab.params.simulation import SimulationConfig
from infonce_lab.params.study import Params
from infonce_lab.params.text import TransformerEncoderConfig

GIB = 1 << 30
# A process with torch and this package imported sits at ≈ 0.5 GiB before any array.
PROCESS_BASE = GIB // 2
# Training arrays live on the accelerator unless the device is the CPU; no accelerator on sale
# has more than 192 GB (NVIDIA B200), so a size beyond that fits none.
LARGEST_ACCELERATOR = 192 * 10**9
MEMORY_ENV = "INFONCE_LAB_MEMORY_GIB"  # to budget below the machine (a shared host, a cgroup)


@dataclass(frozen=True)
class Footprint:
    stage: str    # DVC's stage kind, or kind@instance (simulate@s1)
    key: str      # the dotted params key that drives it
    value: object
    bytes: int
    what: str     # the arrays and the formula
    device: str | None = None  # the training device setting when it is training memory
    fix: str = ""  # what to do; default: lower the key


def machine_bytes() -> int:
    """Memory this process may use: physical RAM, a cgroup v2 limit if lower, or the user's own
    budget (``INFONCE_LAB_MEMORY_GIB``)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    except OSError:
        pass
    if (own := os.environ.get(MEMORY_ENV)):
        try:
            total = min(total, int(float(own) * GIB))
        except ValueError:
            raise ConfigError(f"{MEMORY_ENV}={own!r}: expected a number of GiB") from None
    return total


def fmt_bytes(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1024:.0f} KiB"


def _has_gpu() -> bool:
    # Without importing torch (a second here): the NVIDIA driver's device list.
    return Path("/proc/driver/nvidia/gpus").is_dir() and any(
        Path("/proc/driver/nvidia/gpus").iterdir())


def _test_images(dataset: object) -> int:
    """The test split's images: the published split, or ``test_fraction`` of the whole set."""
    facts = DATASET_KINDS[dataset.kind]
    if facts.test_images is not None:
        return facts.test_images
    return round(facts.total * dataset.test_fraction)


def _candidates(loss: object, batch: int) -> int:
    """Rows of the loss's similarity matrix: both views of every image for SimCLR's candidate
    set (``all_views``), one view per image otherwise."""
    return 2 * batch if getattr(loss, "candidates", None) == "all_views" else batch


def _pairs(batches: int, batch_images: int) -> int:
    """Candidate pairs of a link bank: 2·batches·B anchors × (2B − 1) candidates each."""
    return 2 * batches * batch_images * (2 * batch_images - 1)


def footprints(p: Params) -> list[Footprint]:
    """The dominant allocation of every stage the params would run."""
    out: list[Footprint] = []
    t = p.training
    image_losses = {r.loss for r in p.runs()}
    for name in sorted(image_losses):
        m = _candidates(p.losses[name], t.batch_size)
        # losses/common.similarity_stats (the telemetry, every log step): a float32 m×m
        # similarity, its masks and int64 indices of the masked entries — 25·m² bytes measured
        # (13·m² for InfoNCE's own forward and backward, 16·m² for WEINCE's).
        out.append(Footprint("pretrain", "training.batch_size", t.batch_size, 25 * m * m,
                             f"loss {name!r}: the {m}×{m} similarity matrices (25·m² B)",
                             device=t.device))
    if p.text_runs():
        tt = p.text.training
        for name in sorted({r.loss for r in p.text_runs()}):
            m = _candidates(p.losses[name], tt.batch_size)
            out.append(Footprint("text_pretrain", "text.training.batch_size", tt.batch_size,
                                 25 * m * m, f"loss {name!r}: the {m}×{m} similarity matrices "
                                 "(25·m² B)", device=tt.device))
        for name in sorted({r.encoder for r in p.text_runs()}):
            out.extend(_encoder_state(name, p.text.encoders[name], tt.device))
    for d in sorted({r.dataset for r in p.runs()}):
        n = _test_images(p.datasets[d])
        # evaluation.geometry.uniformity (pipeline/protocol): float64 pairwise distances of the
        # test features and their exponentials, 12·n² B measured.
        out.append(Footprint(f"evaluate@{d}", f"datasets.{d}.kind", p.datasets[d].kind,
                             12 * n * n, f"the uniformity of {n:,} test features (12·n² B)",
                             fix="The test split's size is the dataset's own: evaluate it on a "
                                 "machine with more memory."))
    if p.runs():
        tails = p.tails
        n = _pairs(tails.bank.batches, tails.bank.batch_images)
        # tails/link.link_test: ≈ 20 float64 arrays of one value per candidate pair (160·N B).
        out.append(Footprint("diagnose", "tails.bank.batch_images", tails.bank.batch_images,
                             160 * n, f"the link test over {n:,} candidate pairs (160 B each; "
                             "with tails.bank.batches)"))
        pot = tails.pot
        n_p = pot.repeats * pot.batch_images * (pot.batch_images - 1) // 2
        # tails/pot: 40 B per pair stored and transient, 48 B per exceedance per bootstrap.
        out.append(Footprint("diagnose", "tails.pot.batch_images", pot.batch_images,
                             int(40 * n_p + 48 * pot.bootstrap * (1 - pot.q) * n_p),
                             f"POT over {n_p:,} pairs and {pot.bootstrap} bootstrap replicates"))
        al = tails.allocation
        # tails/allocation.gradient_allocation: random keys + argsort, then ≈ 9 (a,s,k) float64.
        out.append(Footprint("diagnose", "tails.allocation.pool", al.pool,
                             max(16 * al.anchors * al.subsets * al.pool,
                                 8 * al.anchors * al.subsets * (al.pool + 9 * al.k)),
                             "the gradient allocation's anchors × subsets × pool arrays"))
    tx = p.text.tails
    if p.text_runs() and tx.encoders:
        n = _pairs(tx.batches, tx.batch_size)
        out.append(Footprint("text_evaluate", "text.tails.batch_size", tx.batch_size, 160 * n,
                             f"the text link test over {n:,} candidate pairs (160 B each; with "
                             "text.tails.batches)"))
    sim = p.simulation
    for exp in sim.experiments:
        out.extend(_simulation(sim, exp))
    return out


def transformer_layer_params(layers: int, hidden: int, inner: int) -> int:
    """The dominant term of a BERT encoder's parameter count: per layer the four h×h attention
    projections and the two h×i feed-forward ones (biases, norms and embeddings left out)."""
    return layers * (4 * hidden * hidden + 2 * hidden * inner)


def _encoder_state(name: str, enc: TransformerEncoderConfig, device: str) -> list[Footprint]:
    # A from-scratch architecture is the only one params can make arbitrarily large; a
    # pretrained source's size is its own. Float32 weights, gradients and Adam's two moments:
    # 16 B a parameter (the text loop keeps the weights in float32 under bf16 autocast).
    arch = enc.overrides
    if not enc.random_init or None in (arch.num_hidden_layers, arch.hidden_size,
                                       arch.intermediate_size):
        return []
    n = transformer_layer_params(arch.num_hidden_layers, arch.hidden_size,  # type: ignore[arg-type]
                                 arch.intermediate_size)  # type: ignore[arg-type]
    return [Footprint(
        "text_pretrain", f"text.encoders.{name}.overrides.hidden_size", arch.hidden_size,
        16 * n, f"encoder {name!r}: {n:,} parameters' weights, gradients and Adam moments "
        "(16 B × L·(4h² + 2h·i))", device=device,
        fix=f"Lower text.encoders.{name}.overrides (hidden_size, intermediate_size or "
            "num_hidden_layers).")]


def _simulation(sim: SimulationConfig, exp: str) -> list[Footprint]:
    st = f"simulate@{exp}"
    key = f"simulation.{exp}"
    if exp == "s0":
        c = sim.s0
        g = len(c.c_ratios) + (3 + len(c.schedule.cosine_horizons) if c.fast else 0)
        # s0._anneal_run: bootstrap resample counts, and the noise of one check interval.
        b = 8 * c.bootstrap * (c.chains + c.arrhenius.chains) + int(
            12 * (c.check_dt / c.dt) * g * c.chains)
        return [Footprint(st, f"{key}.chains", c.chains, b,
                          f"{g} schedules × chains, bootstrap × chains")]
    if exp == "s1":
        # barriers.s1_barrier / s1.gibbs_trap_mass: two int64 label volumes and float64 energies
        # on the whole grid³ (88 B per point measured).
        return [Footprint(st, f"{key}.grid", sim.s1.grid, 88 * sim.s1.grid ** 3,
                          f"the {sim.s1.grid}³ energy and basin-label grids (88 B per point)")]
    if exp == "negatives":
        q = max(sim.negatives.n_pairs)
        # circle.CircleInfoNCE: the float64 scatter matrix of p² × (2p−1)² pairs of terms.
        return [Footprint(st, f"{key}.n_pairs", q, 16 * q * q * (2 * q - 1) ** 2,
                          f"the scatter matrix at p = {q} (16·p²·(2p−1)² B)")]
    if exp == "gibbs":
        c = sim.gibbs
        # population.GeodesicKdeLogDensity: particles² float64 kernels per temperature × seed.
        b = max(12 * len(c.taus) * c.seeds * c.particles ** 2,
                12 * (1 + len(c.extra_bandwidths)) * len(c.extra_taus) * c.bandwidth_seeds
                * c.bandwidth_particles ** 2) + 80 * c.n_gibbs
        return [Footprint(st, f"{key}.particles", c.particles, b,
                          "the particle × particle kernels of every temperature and seed")]
    if exp == "modality_gap":
        c = sim.modality_gap
        n = max(c.batch, *c.arm_batches) if c.arm_sigma is not None else c.batch
        # population.BatchedInfoNCE: a chunk of runs' float32 similarities at a time (2²⁰ of
        # them, or one run's n² where that is more), twice with hard negatives, plus the thin
        # products; the evaluation pairs and their embeddings (96 B per pair and run).
        b = 3 * 4 * max(1 << 20, n * n) + 96 * len(c.sigmas) * c.seeds * c.n_eval
        key_n = "arm_batches" if n != c.batch else "batch"
        return [Footprint(st, f"{key}.{key_n}", n, b,
                          f"chunks of {max(1, (1 << 20) // (n * n))} run(s) × {n}² similarities")]
    if exp == "lifted_energy":
        n = max(sim.lifted_energy.ns)
        # lifted_energy: the batch's N × min(N, 2048) blocks of float64 similarities.
        return [Footprint(st, f"{key}.ns", n, 8 * min(2048, n) * n,
                          f"batches of N = {n} in blocks of {min(2048, n)}")]
    return []  # hessian, prop_c2, large_batch, link_theory: chunked, bounded at ≈ 0.2 GiB


def check_memory(p: Params, stage: str | None = None, limit: int | None = None) -> None:
    """Refuse params whose estimate does not fit, naming the key (``stage``: only that stage's,
    e.g. ``DVC_STAGE``'s ``simulate@s1`` or ``pretrain@…``; None: every stage's)."""
    host = machine_bytes() if limit is None else limit
    kind = None if stage is None else stage.split("@")[0]
    kind = "pretrain" if kind == "pretrain_primary" else kind
    for f in footprints(p):
        if stage is not None and f.stage not in (kind, stage):
            continue
        on_gpu = f.device == "cuda" or (f.device == "auto" and _has_gpu())
        room = max(host, LARGEST_ACCELERATOR) if on_gpu else host
        if f.bytes + PROCESS_BASE > room:
            where = "any accelerator (192 GB at most)" if room != host else (
                f"this machine ({fmt_bytes(host)}; {MEMORY_ENV} sets a lower budget)")
            raise ConfigError(f"{f.key} = {f.value}: the {f.stage} stage would need ≈ "
                              f"{fmt_bytes(f.bytes)} for {f.what}, more than {where}. "
                              + (f.fix or f"Lower {f.key} (or what it multiplies)."))
