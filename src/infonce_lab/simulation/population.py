"""Population geometry of contrastive learning (SPECS E.3–E.5): particles trained on the intrinsic
free energy against the Gibbs law on S² (E.5(2)), and the modality gap of symmetric InfoNCE with
two linear encoders on S¹ (E.5(3)).

Both experiments batch every (setting, seed) run into one tensor and one Adam: Adam's update is
elementwise, so the batched runs are exactly the independent ones, computed together.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from infonce_lab.losses import symmetric_info_nce

# ----------------------------------------------------------------------------------------------
# E.5(2): unimodal Gibbs on S²

M1 = (0.0, 0.0, 1.0)
M2 = (0.85, 0.15, -0.5)  # normalised where used


def well_centres() -> np.ndarray:
    m = np.array([M1, M2], dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def double_well(
    z: torch.Tensor | np.ndarray, kappa: float = 12.0, w: float = 0.5
) -> torch.Tensor | np.ndarray:
    """U(z) = −(1/κ)·log[w·e^{κ m₁ᵀz} + (1−w)·e^{κ m₂ᵀz}] (SPECS E.5(2)); torch or numpy."""
    m = well_centres()
    if isinstance(z, torch.Tensor):
        logits = kappa * z @ torch.as_tensor(m.T, dtype=z.dtype)
        logw = torch.tensor([math.log(w), math.log(1 - w)], dtype=z.dtype)
        return -torch.logsumexp(logits + logw, dim=-1) / kappa
    logits = kappa * np.asarray(z) @ m.T + np.log([w, 1 - w])
    mx = logits.max(-1, keepdims=True)
    return -(mx[..., 0] + np.log(np.exp(logits - mx).sum(-1))) / kappa


def geodesic(z: np.ndarray | torch.Tensor, centres: np.ndarray) -> np.ndarray:
    """Geodesic distances (..., C) from unit vectors z (..., 3) to the centres (C, 3)."""
    z = z.detach().numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
    return np.arccos(np.clip(z @ centres.T, -1.0, 1.0))


def well_mass(z: np.ndarray | torch.Tensor, radius: float = 0.5) -> np.ndarray:
    """Fraction of the points (..., M, 3) within geodesic ``radius`` of either well centre."""
    return (geodesic(z, well_centres()).min(-1) <= radius).mean(-1)


def uniform_sphere(rng: np.random.Generator, n: int, d: int = 3) -> np.ndarray:
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def gibbs_mass(
    potential: Callable[[np.ndarray], np.ndarray],
    taus: Sequence[float],
    radius: float = 0.5,
    n_samples: int = 120_000,
    seed: int = 0,
) -> dict[str, list[float]]:
    """Mass of ρ* ∝ e^{−U/τ} within ``radius`` of either well: self-normalised importance sampling
    from the uniform law (SPECS E.5(2)), with its delta-method standard error and the effective
    sample size (the estimate is only as good as the ESS at low τ)."""
    z = uniform_sphere(np.random.default_rng(seed), n_samples)
    u = potential(z)
    inside = (geodesic(z, well_centres()).min(-1) <= radius).astype(np.float64)
    mass, se, ess = [], [], []
    for tau in taus:
        logw = -u / tau
        wts = np.exp(logw - logw.max())
        wts /= wts.sum()
        m = float(wts @ inside)
        mass.append(m)
        se.append(float(np.sqrt(np.sum(wts**2 * (inside - m) ** 2))))
        ess.append(float(1.0 / np.sum(wts**2)))
    return {"mass": mass, "se": se, "ess": ess}


def cap_area_fraction(radius: float) -> float:
    """Area of one geodesic cap of the given radius over the sphere's: 2π(1 − cos r)/4π."""
    return (1 - math.cos(radius)) / 2


class GeodesicKdeLogDensity(torch.autograd.Function):
    """log ρ̂(z_i) = log[(1/M)·Σ_j exp(−d(z_i, z_j)²/(2h²))], d the geodesic distance, self included
    (the normalising constant of the kernel does not depend on the particles and is dropped).

    Written with an analytic backward because autograd through arccos and logsumexp needs about
    twice the elementwise passes over the (runs × M × M) tensor, which bounds the CPU cost here.
    With c = cos d: ∂(−d²/2h²)/∂c = (1/h²)·d/sin d, and d/sin d = 1/sinc(d/π) is smooth at d = 0,
    so coincident particles (the self term) need no clamping at c = 1.
    """

    @staticmethod
    def forward(ctx, z: torch.Tensor, inv2h2: torch.Tensor) -> torch.Tensor:
        a = torch.arccos((z @ z.transpose(-1, -2)).clamp_(-1 + 1e-6, 1.0))
        logits = a.square().mul_(-inv2h2)
        lse = torch.logsumexp(logits, dim=-1, keepdim=True)
        # w_ij = ∂ log ρ̂_i / ∂ c_ij = softmax_j(logits_i)·2·inv2h2·d/sin d (in place: the
        # (runs × M × M) passes are the cost of this experiment)
        w = logits.sub_(lse).exp_().mul_(2 * inv2h2).div_(torch.sinc(a.div_(math.pi)))
        ctx.save_for_backward(z, w)
        return lse.squeeze(-1) - math.log(z.shape[-2])

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, None]:
        z, w = ctx.saved_tensors
        g = grad_out.unsqueeze(-1) * w
        # c_ij = z_iᵀz_j moves with both z_i and z_j.
        return (g + g.transpose(-1, -2)) @ z, None


def free_energy_particles(
    settings: Sequence[tuple[float, float]],
    seeds: int = 3,
    particles: int = 256,
    steps: int = 1000,
    lr: float = 5e-2,
    param_noise: float = 0.06,
    kappa: float = 12.0,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> np.ndarray:
    """Particles minimising mean U/τ + mean log ρ̂ (SPECS E.5(2)) for every (h, τ) in ``settings``
    and every seed at once.

    ρ̂ is the resubstitution Gaussian KDE on geodesic distance with bandwidth h, self included.
    Parameters are unnormalised vectors projected to S²; after each Adam step N(0, param_noise²)
    is added to them, as published. float32 by default: the masses are counts of particles, and
    the KDE gradient is formed without cancellation. Returns unit vectors (S, seeds, M, 3).
    """
    gen = torch.Generator().manual_seed(seed)
    shape = (len(settings), seeds, particles, 3)
    params = torch.randn(shape, generator=gen, dtype=dtype).requires_grad_(True)
    h = torch.tensor([s[0] for s in settings], dtype=dtype).view(-1, 1, 1, 1)
    tau = torch.tensor([s[1] for s in settings], dtype=dtype).view(-1, 1, 1)
    inv2h2 = 0.5 / h**2
    opt = torch.optim.Adam([params], lr=lr)
    for _ in range(steps):
        z = F.normalize(params, dim=-1)
        log_rho = GeodesicKdeLogDensity.apply(z, inv2h2)
        # Summing the runs' objectives gives each run exactly its own gradient.
        loss = (double_well(z, kappa) / tau + log_rho).mean(-1).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            params.add_(param_noise * torch.randn(shape, generator=gen, dtype=dtype))
    return F.normalize(params.detach(), dim=-1).double().numpy()


def run_gibbs(
    taus: Sequence[float] = (10, 5, 2.5, 1, 0.5, 0.2, 0.1),
    bandwidth: float = 0.35,
    extra_bandwidths: Sequence[float] = (0.2, 0.1),
    extra_taus: Sequence[float] = (0.5, 0.2, 0.1),
    seeds: int = 3,
    particles: int = 256,
    steps: int = 400,
    n_gibbs: int = 120_000,
    radius: float = 0.5,
    part_tol: float = 0.05,
    seed: int = 0,
) -> dict:
    """Trained vs Gibbs mass near the wells over τ with the published bandwidth, and with the
    smaller ``extra_bandwidths`` at ``extra_taus`` (the test of the bandwidth explanation for the
    low-τ parting). Trained and Gibbs "part" where |trained − Gibbs| > part_tol and more than 3
    combined standard errors (the seeds' SEM and the Monte-Carlo SE)."""
    grid = {bandwidth: list(taus), **{h: list(extra_taus) for h in extra_bandwidths}}
    settings = [(h, t) for h, ts in grid.items() for t in ts]
    z = free_energy_particles(settings, seeds, particles, steps, seed=seed)
    trained = well_mass(z, radius)  # (S, seeds)
    all_taus = sorted({t for _, t in settings}, reverse=True)
    gibbs = gibbs_mass(double_well, all_taus, radius, n_gibbs, seed=seed)
    g_of = dict(zip(all_taus, zip(gibbs["mass"], gibbs["se"], strict=True), strict=True))
    per_h, k = [], 0
    for h, ts in grid.items():
        block = trained[k : k + len(ts)]
        k += len(ts)
        g = np.array([g_of[t][0] for t in ts])
        g_se = np.array([g_of[t][1] for t in ts])
        mean = block.mean(-1)
        sem = block.std(-1, ddof=1) / math.sqrt(seeds) if seeds > 1 else np.zeros(len(ts))
        diff = mean - g
        parted = (np.abs(diff) > part_tol) & (np.abs(diff) > 3 * np.hypot(sem, g_se))
        per_h.append({
            "h": h, "tau": ts, "gibbs_mass": g.tolist(), "trained_mean": mean.tolist(),
            "trained_sem": sem.tolist(), "trained_per_seed": block.tolist(),
            "diff": diff.tolist(), "parted_at_tau": [t for t, p in zip(ts, parted, strict=True) if p],
        })
    return {"tau": all_taus, "radius": radius, "gibbs_mass": gibbs["mass"],
            "gibbs_se": gibbs["se"], "gibbs_ess": gibbs["ess"],
            "uniform_mass": 2 * cap_area_fraction(radius), "particles": particles,
            "steps": steps, "seeds": seeds, "by_bandwidth": per_h}


# ----------------------------------------------------------------------------------------------
# E.5(3): modality gap on S¹


def sample_latents(
    rng: np.random.Generator, shape: tuple[int, ...], sigma_mis: np.ndarray, kappa: float = 6.0,
    weight: float = 0.7,
) -> tuple[np.ndarray, np.ndarray]:
    """θ ~ 0.7·vM(0, 6) + 0.3·vM(π, 6) and θ₂ = wrap(θ + σ_mis·N(0, 1)); σ_mis broadcasts over
    the leading axis of ``shape`` (one value per run)."""
    centre = np.where(rng.random(shape) < weight, 0.0, np.pi)
    theta = rng.vonmises(centre, kappa)
    sig = np.asarray(sigma_mis, np.float64).reshape(-1, *([1] * (len(shape) - 1)))
    theta2 = np.angle(np.exp(1j * (theta + sig * rng.standard_normal(shape))))
    return theta, theta2


def _features(rng: np.random.Generator, theta: np.ndarray, noise: float) -> torch.Tensor:
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1) + noise * rng.standard_normal(
        (*theta.shape, 2)
    )
    return torch.from_numpy(x)


def train_modality_encoders(
    sigma_mis: np.ndarray,
    steps: int = 2000,
    batch: int = 256,
    tau: float = 0.07,
    lr: float = 5e-3,
    feature_noise: float = 0.02,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, np.ndarray]]:
    """Two bias-free linear 2→2 encoders per run (one run per entry of sigma_mis), trained with
    the project's symmetric InfoNCE, vmapped over runs; Adam, a fresh batch every step. Init as
    torch.nn.Linear, U(±1/√2). Returns f, g (R, 2, 2), the initial maps and the last losses."""
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    r = len(sigma_mis)
    bound = 1 / math.sqrt(2)
    f = (torch.rand(r, 2, 2, generator=gen, dtype=dtype) * 2 - 1) * bound
    g = (torch.rand(r, 2, 2, generator=gen, dtype=dtype) * 2 - 1) * bound
    info = {"f_init": f.double().numpy().copy(), "g_init": g.double().numpy().copy()}
    f.requires_grad_(True)
    g.requires_grad_(True)
    opt = torch.optim.Adam([f, g], lr=lr)
    loss_fn = torch.func.vmap(lambda a, b: symmetric_info_nce(a, b, tau)[0])
    losses = torch.zeros(r)
    for _ in range(steps):
        th1, th2 = sample_latents(rng, (r, batch), sigma_mis)
        x1 = _features(rng, th1, feature_noise).to(dtype)
        x2 = _features(rng, th2, feature_noise).to(dtype)
        losses = loss_fn(x1 @ f.transpose(1, 2), x2 @ g.transpose(1, 2))
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()  # each run gets its own gradient
        opt.step()
    info["final_loss"] = losses.detach().double().numpy()
    return f.detach(), g.detach(), info


def angle_histograms(z: np.ndarray, bins: int = 60) -> np.ndarray:
    """Histograms of the embedding angles (R, n, 2) → (R, bins) on [−π, π], +1e-8, normalised
    (SPECS E.5(3)); vectorised over runs with one bincount.

    The 1e-8 is added to the counts (our reading of "add 1e-8, normalize"), so an empty bin gets
    probability ~1e-8/n and D_sym between disjoint supports saturates near 2·log(n/1e-8) ≈ 55.
    """
    ang = np.arctan2(z[..., 1], z[..., 0])
    idx = np.clip(((ang + np.pi) / (2 * np.pi) * bins).astype(np.int64), 0, bins - 1)
    r = z.shape[0]
    counts = np.bincount((idx + bins * np.arange(r)[:, None]).ravel(), minlength=r * bins)
    p = counts.reshape(r, bins).astype(np.float64) + 1e-8
    return p / p.sum(1, keepdims=True)


def embedding_histograms(
    f: torch.Tensor, g: torch.Tensor, sigma_mis: np.ndarray, n_eval: int = 8000, seed: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Angle histograms of both modalities' embeddings on n_eval fresh pairs per run: (R, 60) each."""
    rng = np.random.default_rng(seed)
    th1, th2 = sample_latents(rng, (len(sigma_mis), n_eval), sigma_mis)
    with torch.no_grad():
        x1, x2 = _features(rng, th1, 0.02).to(f.dtype), _features(rng, th2, 0.02).to(g.dtype)
        z1 = F.normalize(x1 @ f.transpose(1, 2), dim=-1).double().numpy()
        z2 = F.normalize(x2 @ g.transpose(1, 2), dim=-1).double().numpy()
    return angle_histograms(z1), angle_histograms(z2)


def symmetric_kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """D_sym = KL(p‖q) + KL(q‖p) over the last axis (no ½, as published)."""
    return np.sum((p - q) * (np.log(p) - np.log(q)), axis=-1)


def run_modality_gap(
    sigmas: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    seeds: int = 12,
    steps: int = 1000,
    batch: int = 128,
    n_eval: int = 8000,
    outlier_factor: float = 10.0,
    collapse_ratio: float = 0.1,
    seed: int = 0,
) -> dict:
    """D_sym vs σ_mis: mean ± SEM (as published), median and every seed; seeds whose D_sym exceeds
    ``outlier_factor`` × their σ's median are flagged and diagnosed (singular values and
    determinant signs of the learned and initial maps, occupied histogram bins).

    An encoder counts as collapsed when σ_min/σ_max < collapse_ratio: a rank-1 linear map sends
    the circle to two antipodal points after normalisation, so its histogram fills a few bins and
    the 1e-8 pseudo-counts make D_sym huge. The cross-table of outlier vs collapsed tests that
    explanation on every seed. Published sizes are batch 256, 2000 steps, 20 seeds; the defaults
    are cut for the CPU budget.
    """
    sig = np.repeat(np.asarray(sigmas, np.float64), seeds)  # run r = (σ index, seed)
    f, g, info = train_modality_encoders(sig, steps=steps, batch=batch, seed=seed)
    p, q = embedding_histograms(f, g, sig, n_eval, seed=seed + 1)
    d = symmetric_kl(p, q).reshape(len(sigmas), seeds)
    f, g = f.double().numpy(), g.double().numpy()
    sv_f = np.linalg.svd(f, compute_uv=False)  # (R, 2), descending
    sv_g = np.linalg.svd(g, compute_uv=False)
    det_sign = np.sign(np.linalg.det(f) * np.linalg.det(g))
    det_sign_init = np.sign(np.linalg.det(info["f_init"]) * np.linalg.det(info["g_init"]))
    occupied = np.stack([(p > 1e-6).sum(1), (q > 1e-6).sum(1)], 1)
    ratio = np.minimum(sv_f[:, 1] / sv_f[:, 0], sv_g[:, 1] / sv_g[:, 0])
    collapsed = (ratio < collapse_ratio).reshape(len(sigmas), seeds)
    median = np.median(d, axis=1)
    is_outlier = d > outlier_factor * median[:, None]
    outliers = []
    for k, j in zip(*np.nonzero(is_outlier), strict=True):
        r = k * seeds + j
        outliers.append({
            "sigma_mis": sigmas[k], "seed": int(j), "d_sym": float(d[k, j]),
            "median_d_sym": float(median[k]),
            "singular_values_f": sv_f[r].tolist(), "singular_values_g": sv_g[r].tolist(),
            "det_fg_sign": float(det_sign[r]), "det_fg_sign_init": float(det_sign_init[r]),
            "occupied_bins": occupied[r].tolist(), "final_loss": float(info["final_loss"][r]),
        })
    # Mean ± SEM over the non-collapsed seeds; None where fewer than two are left (JSON-safe).
    keep = ~collapsed
    clean_mean = [float(d[k][keep[k]].mean()) if keep[k].any() else None
                  for k in range(len(sigmas))]
    clean_sem = [float(d[k][keep[k]].std(ddof=1) / math.sqrt(keep[k].sum()))
                 if keep[k].sum() > 1 else None for k in range(len(sigmas))]
    return {
        "sigma_mis": list(sigmas), "seeds": seeds, "steps": steps, "batch": batch,
        "d_sym_mean": d.mean(1).tolist(),
        "d_sym_sem": (d.std(1, ddof=1) / math.sqrt(seeds)).tolist(),
        "d_sym_median": median.tolist(), "d_sym_per_seed": d.tolist(),
        "d_sym_mean_non_collapsed": clean_mean,
        "d_sym_sem_non_collapsed": clean_sem,
        "min_singular_ratio_per_seed": ratio.reshape(len(sigmas), seeds).tolist(),
        "collapsed_per_seed": collapsed.tolist(),
        "outlier_vs_collapsed": {
            "outlier_and_collapsed": int((is_outlier & collapsed).sum()),
            "outlier_not_collapsed": int((is_outlier & ~collapsed).sum()),
            "collapsed_not_outlier": int((~is_outlier & collapsed).sum()),
            "neither": int((~is_outlier & ~collapsed).sum()),
        },
        "det_fg_sign_per_seed": det_sign.reshape(len(sigmas), seeds).tolist(),
        "det_fg_sign_init_per_seed": det_sign_init.reshape(len(sigmas), seeds).tolist(),
        "final_loss_per_seed": info["final_loss"].reshape(len(sigmas), seeds).tolist(),
        "outliers": outliers,
    }
