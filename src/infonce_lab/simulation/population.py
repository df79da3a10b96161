"""Population geometry of contrastive learning (the geometry paper's free energy, its multimodal
energy F^Sym and its experiments): particles trained on the intrinsic free energy against the
Gibbs law on S² (the Gibbs experiment), and the modality gap of symmetric InfoNCE with two linear
encoders on S¹ (the modality-gap experiment) beside its controls — identity encoders (the inputs'
own gap) and one-directional InfoNCE.

Both experiments batch every (setting, seed) run into one tensor and one Adam: Adam's update is
elementwise, so the batched runs are exactly the independent ones, computed together. Both are
optimisers at a constant learning rate, so their convergence check is a second step count, read
off one continued run: halving the learning rate would not refine a discretisation of one target
— the Gibbs particles' injected parameter noise is fixed per step, so a smaller step changes the
balance of drift and noise, i.e. the process itself — while another step count asks exactly
whether the run has reached the end state the verdicts are about. The Gibbs experiment reads its
steps and twice them; the modality gap its published 2000 steps (the verdicts) and half of them
(the check).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from infonce_lab.evaluation.stats import TInference
from infonce_lab.simulation import estimates as est

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
    """U(z) = −(1/κ)·log[w·e^{κ m₁ᵀz} + (1−w)·e^{κ m₂ᵀz}] (the Gibbs experiment); torch or numpy."""
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
    from the uniform law (the Gibbs experiment), with its delta-method standard error and the
    effective sample size (the estimate is only as good as the ESS at low τ)."""
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
    With c = cos d: ∂(−d²/2h²)/∂c = (1/h²)·d/sin d. The cosines are clamped to [−1 + 1e-6,
    1 − 1e-7], so d ≥ 4.5e-4 and sin d > 0 (coincident particles — the self term — then sit at a
    distance whose kernel value differs from 1 by < 1e-5 at h ≥ 0.1); the softmax is formed once
    from one exp pass and reused for the weights.
    """

    @staticmethod
    def forward(ctx, z: torch.Tensor, inv2h2: torch.Tensor) -> torch.Tensor:
        a = torch.arccos((z @ z.transpose(-1, -2)).clamp_(-1 + 1e-6, 1 - 1e-7))
        logits = a.square().mul_(-inv2h2)
        mx = logits.amax(-1, keepdim=True)
        e = logits.sub_(mx).exp_()
        s = e.sum(-1, keepdim=True)
        out = (s.log() + mx).squeeze(-1) - math.log(z.shape[-2])
        # w_ij = ∂ log ρ̂_i / ∂ c_ij = softmax_j(logits_i)·2·inv2h2·d/sin d, in place: the
        # (runs × M × M) passes are the cost of this experiment.
        w = e.mul_((2 * inv2h2) / s).mul_(a).div_(a.sin_())
        ctx.save_for_backward(z, w)
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, None]:
        z, w = ctx.saved_tensors
        g = grad_out.unsqueeze(-1) * w
        # c_ij = z_iᵀz_j moves with both z_i and z_j: (g + gᵀ)z, as two products (a transposed
        # elementwise add costs more than a second small matrix product)
        return g @ z + g.transpose(-1, -2) @ z, None


def free_energy_particles(
    settings: Sequence[tuple[float, float]],
    seeds: int = 3,
    particles: int = 256,
    steps: Sequence[int] = (1000,),
    lr: float = 5e-2,
    param_noise: float = 0.06,
    kappa: float = 12.0,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> list[np.ndarray]:
    """Particles minimising mean U/τ + mean log ρ̂ (the Gibbs experiment) for every (h, τ) in
    ``settings`` and every seed at once; the particles after each number of ``steps``
    (ascending), all taken from one run of max(steps) steps.

    One run serves every step count: with a constant learning rate and one generator, the first
    S steps of a 2S-step run are the S-step run, bit for bit, so the doubled-steps check costs 2S
    steps, not 3S.

    ρ̂ is the resubstitution Gaussian KDE on geodesic distance with bandwidth h, self included.
    Parameters are unnormalised vectors projected to S²; after each Adam step N(0, param_noise²)
    is added to them, as published. float32 by default: the masses are counts of particles, and
    the KDE gradient is formed without cancellation. Returns unit vectors (S, seeds, M, 3) per
    step count.
    """
    marks = sorted(set(int(s) for s in steps))
    if not marks or marks[0] < 1:
        raise ValueError(f"steps must be positive step counts, got {list(steps)}")
    gen = torch.Generator().manual_seed(seed)
    shape = (len(settings), seeds, particles, 3)
    params = torch.randn(shape, generator=gen, dtype=dtype).requires_grad_(True)
    h = torch.tensor([s[0] for s in settings], dtype=dtype).view(-1, 1, 1, 1)
    tau = torch.tensor([s[1] for s in settings], dtype=dtype).view(-1, 1, 1)
    inv2h2 = 0.5 / h**2
    opt = torch.optim.Adam([params], lr=lr)
    out = []
    for k in range(1, marks[-1] + 1):
        z = F.normalize(params, dim=-1)
        log_rho = GeodesicKdeLogDensity.apply(z, inv2h2)
        # Summing the runs' objectives gives each run exactly its own gradient.
        loss = (double_well(z, kappa) / tau + log_rho).mean(-1).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            params.add_(param_noise * torch.randn(shape, generator=gen, dtype=dtype))
        if k in marks:
            out.append(F.normalize(params.detach(), dim=-1).double().numpy())
    return out


def run_gibbs(
    *,
    taus: Sequence[float],
    bandwidth: float,
    extra_bandwidths: Sequence[float],
    extra_taus: Sequence[float],
    seeds: int,
    particles: int,
    bandwidth_seeds: int,
    bandwidth_particles: int,
    steps: int,
    n_gibbs: int,
    radius: float,
    seed: int,
) -> dict:
    """Trained vs Gibbs mass near the wells over τ with the published bandwidth (``published``),
    and the test of the bandwidth explanation for the low-τ parting (``bandwidth_test``): the
    published and the smaller ``extra_bandwidths`` at ``extra_taus``, in a second run with
    ``bandwidth_particles`` particles — fewer particles bias a small-h KDE (its self term), and
    the parting and its closing are compared at one particle count. Both after ``steps`` and after
    twice the steps (the convergence check).

    Every verdict quantity is stored as ``{"step": estimate, "half_step": estimate}``
    (``half_step``: the doubled-steps run): the trained mass and trained − Gibbs per (h, τ)
    (t over seeds; the Gibbs law's Monte-Carlo error combined by Welch–Satterthwaite, df from its
    effective sample size), the concentration mass(τ_min) − mass(τ_max) at the published h, and
    the reduction of the parting at τ_min from the published h to each smaller one. Nothing here
    decides a verdict: the report's rules do.
    """
    keys = ("step", "half_step")
    hot, cold = max(taus), min(taus)
    all_taus = sorted(set(taus) | set(extra_taus), reverse=True)
    gibbs = gibbs_mass(double_well, all_taus, radius, n_gibbs, seed=seed)
    g_inf = {t: est.monte_carlo(m, se, ess) for t, m, se, ess in
             zip(all_taus, gibbs["mass"], gibbs["se"], gibbs["ess"], strict=True)}

    def masses(settings: list[tuple[float, float]], n_seeds: int, n_particles: int,
               run_seed: int) -> dict[str, dict[tuple[float, float], np.ndarray]]:
        runs = free_energy_particles(settings, n_seeds, n_particles, (steps, 2 * steps),
                                     seed=run_seed)
        return {key: dict(zip(settings, well_mass(z, radius), strict=True))
                for key, z in zip(keys, runs, strict=True)}  # (h, τ) → per-seed masses

    def rows(m: dict, h: float, ts: Sequence[float]) -> list[dict]:
        out = []
        for t in ts:
            inf = {key: est.mean_t(m[key][(h, t)]) for key in keys}
            diff = {key: None if inf[key] is None else est.difference(inf[key], g_inf[t])
                    for key in keys}
            out.append({
                "tau": t, "gibbs_mass": gibbs["mass"][all_taus.index(t)],
                "mass": est.step_pair(*(est.from_t(inf[k], "t over seeds") for k in keys)),
                "minus_gibbs": est.step_pair(*(est.from_t(
                    diff[k], "t over seeds − Monte-Carlo Gibbs mass (Welch)") for k in keys)),
                "per_seed": est.step_pair(*(m[k][(h, t)].tolist() for k in keys)),
            })
        return out

    def welch_diff(m: dict, a: tuple[float, float], b: tuple[float, float], key: str) -> dict:
        ta, tb = est.mean_t(m[key][a]), est.mean_t(m[key][b])
        return est.from_t(None if ta is None or tb is None else est.difference(ta, tb),
                          "difference of two seed means (Welch)")

    pub = masses([(bandwidth, t) for t in taus], seeds, particles, seed)
    out = {
        "radius": radius, "bandwidth": bandwidth, "uniform_mass": 2 * cap_area_fraction(radius),
        "convergence": {"steps": steps, "steps_doubled": 2 * steps, "continued": True},
        "gibbs": {"tau": all_taus, "mass": gibbs["mass"], "se": gibbs["se"],
                  "ess": gibbs["ess"], "n_samples": n_gibbs},
        "published": {"h": bandwidth, "particles": particles, "seeds": seeds,
                      "taus": rows(pub, bandwidth, taus)},
        "concentration": {
            "tau_hot": hot, "tau_cold": cold, "h": bandwidth,
            "trained": est.step_pair(*(welch_diff(pub, (bandwidth, cold), (bandwidth, hot), k)
                                       for k in keys)),
            "gibbs": est.from_t(est.difference(g_inf[cold], g_inf[hot]),
                                "Monte-Carlo (self-normalised importance sampling)"),
        },
        "bandwidth_test": None,
    }
    if extra_bandwidths:
        hs = [bandwidth, *extra_bandwidths]
        test = masses([(h, t) for h in hs for t in extra_taus], bandwidth_seeds,
                      bandwidth_particles, seed + 1)
        out["bandwidth_test"] = {
            "particles": bandwidth_particles, "seeds": bandwidth_seeds,
            "by_bandwidth": [{"h": h, "taus": rows(test, h, extra_taus)} for h in hs],
            # trained(h_pub) − trained(h) at τ_min: the Gibbs mass cancels from the two partings
            "parting_reduction": [
                {"h": h, "tau": cold,
                 **est.step_pair(*(welch_diff(test, (bandwidth, cold), (h, cold), k)
                                   for k in keys))}
                for h in extra_bandwidths],
        }
    return out


# ----------------------------------------------------------------------------------------------
# E.5(3): modality gap on S¹

# The published loss and its control: CLIP's symmetric InfoNCE, and InfoNCE in one direction only
# (anchors of modality 1 against modality 2's candidates), which E.4 credits with one KL
# coupling instead of two.
LOSSES = ("symmetric", "x_to_y")
HARD = "symmetric_hard"  # symmetric InfoNCE with hard-negative weights (the batch/negatives arm)
PSEUDO_COUNT = 1e-8  # added to every histogram bin, as published


def sample_latents(
    rng: np.random.Generator, shape: tuple[int, ...], sigma_mis: np.ndarray, kappa: float = 6.0,
    weight: float = 0.7,
) -> tuple[np.ndarray, np.ndarray]:
    """θ ~ 0.7·vM(0, 6) + 0.3·vM(π, 6) and θ₂ = wrap(θ + σ_mis·N(0, 1)); σ_mis broadcasts over
    the leading axis of ``shape`` (one value per run)."""
    centre = np.where(rng.random(shape) < weight, 0.0, np.pi)
    theta = rng.vonmises(centre, kappa)
    sig = np.asarray(sigma_mis, np.float64).reshape(-1, *([1] * (len(shape) - 1)))
    theta2 = np.remainder(theta + sig * rng.standard_normal(shape) + np.pi, 2 * np.pi) - np.pi
    return theta, theta2


def _features(rng: np.random.Generator, theta: np.ndarray, noise: float) -> torch.Tensor:
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1) + noise * rng.standard_normal(
        (*theta.shape, 2)
    )
    return torch.from_numpy(x)


TAU_MIN = 0.025  # e^{−2/τ} must stay a normal float32
FLOAT32_LOG_MIN = 87.0  # −log of float32's smallest normal (1.18e-38) is 87.3
CHUNK_ENTRIES = 1 << 20  # similarities per chunk of runs: 4 MiB of float32, inside the caches


class BatchedInfoNCE(torch.autograd.Function):
    """InfoNCE of every run at once: unit rows a, b (R, B, d), logits ℓ = a·bᵀ/τ per run, loss
    (R,) = (1 − w)·CE over the rows + w·CE over the columns, one weight w per run: w = ½ is
    CLIP's symmetric loss (the project's ``symmetric_info_nce``), w = 0 the rows only (x → y).
    One call holds both losses' runs.

    With ``beta_hard`` = β > 0 each anchor's negatives are reweighted (Robinson et al. 2021,
    "Contrastive learning with hard negative samples"): the row denominator is
    E_ii + Σ_{j≠i} W_ij·E_ij with W_ij = (B − 1)·E_ij^β / Σ_{k≠i} E_ik^β (mean 1 over the
    negatives; the columns' likewise over i ≠ j), the weights held constant in the gradient, as in
    their importance-weighted estimator. β = 0 is the plain loss, computed by the plain path.

    The gradient is analytic — dL/dℓ_ij = (1/B)[(1 − w)·W_ij·E_ij/r_i + w·W′_ij·E_ij/c_j −
    δ_ij], E = exp(ℓ − 1/τ), r and c the (weighted) row and column sums, W = 1 without hard
    negatives — and computed in the forward, a chunk of runs at a time, so each chunk's
    (B × B) matrices are made, summed and multiplied while they are in the cache and never
    stored: the backward of a per-run loss is its gradient scaled by that run's incoming
    gradient (each run's loss depends on its own rows only). These matrices are this
    experiment's cost; the earlier version, which allocated the (R × B × B) tensor every step and
    read it again in a separate backward, took about 4× as long per similarity (one thread). The
    gradient is computed whether or not it is used. |ℓ| ≤ 1/τ for unit rows, so E lies in [e^{−2/τ}, 1]
    (E^{1+β} in [e^{−2(1+β)/τ}, 1]) and needs no max subtraction while that bound is a normal
    float32.
    """

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, inv_tau: float, col_weight: torch.Tensor,
                beta_hard: float = 0.0) -> torch.Tensor:
        runs, n, d = a.shape
        chunk = max(1, CHUNK_ENTRIES // (n * n))
        shift = torch.full((1, 1, 1), -inv_tau, dtype=a.dtype)
        e_buf = torch.empty((min(chunk, runs), n, n), dtype=a.dtype)
        h_buf = torch.empty_like(e_buf) if beta_hard else None
        loss = torch.empty(runs, dtype=a.dtype)
        ga, gb = torch.empty_like(a), torch.empty_like(b)
        weight = col_weight.to(a.dtype)
        for lo in range(0, runs, chunk):
            hi = min(lo + chunk, runs)
            x, y, w = a[lo:hi], b[lo:hi], weight[lo:hi].unsqueeze(-1)  # w: (C, 1)
            e = e_buf[:hi - lo]
            torch.baddbmm(shift, x, y.transpose(1, 2), alpha=inv_tau, out=e).exp_()
            pos = (x * y).sum(-1).sub_(1.0).mul_(inv_tau)  # ℓ_ii − 1/τ = log E_ii
            if not beta_hard:
                k, r, c = e, e.sum(-1), e.sum(-2)
                u, v = (1 - w) / r, w / c
                diag = torch.full_like(u, -1.0)  # the −δ_ij (k's diagonal is the positives')
            else:
                pd = e.diagonal(dim1=1, dim2=2).clone()  # E_ii, the positives
                h = torch.pow(e, beta_hard, out=h_buf[:hi - lo])  # ∝ exp(β·ℓ): the weights
                # the negatives only: zeroed, not subtracted from the sums (an aligned positive
                # E_ii ≈ 1 beside negatives ≪ 1 would leave float32 rounding as their sum)
                h.diagonal(dim1=1, dim2=2).zero_()
                norm_r, norm_c = h.sum(-1), h.sum(-2)
                k = h.mul_(e)  # E^{1+β} off the diagonal: W·E up to the normaliser
                r = pd + (n - 1) * k.sum(-1) / norm_r
                c = pd + (n - 1) * k.sum(-2) / norm_c
                u, v = (1 - w) * (n - 1) / (norm_r * r), w * (n - 1) / (norm_c * c)
                diag = pd * ((1 - w) / r + w / c) - 1  # the positives, on k's zero diagonal
            loss[lo:hi] = (1 - w[:, 0]) * (r.log() - pos).mean(-1) + w[:, 0] * (c.log() - pos
                                                                                 ).mean(-1)
            # B·dL/dℓ_ij = k_ij·(u_i + v_j) + δ_ij·diag_i, so
            #   ∂a_i ∝ u_i·(k b)_i + (k (v∘b))_i + diag_i·b_i
            #   ∂b_j ∝ (kᵀ(u∘a))_j + v_j·(kᵀa)_j + diag_j·a_j
            # both products as (thin operand)ᵀ·k, k's rows contiguous: MKL's fastest layout here
            uu, vv, dd = u.unsqueeze(-1), v.unsqueeze(-1), diag.unsqueeze(-1)
            kb = torch.bmm(torch.cat([y, vv * y], -1).transpose(1, 2), k.transpose(1, 2))
            ka = torch.bmm(torch.cat([uu * x, x], -1).transpose(1, 2), k)
            kb, ka = kb.transpose(1, 2), ka.transpose(1, 2)  # (C, B, 2d)
            ga[lo:hi] = uu * kb[..., :d] + kb[..., d:] + dd * y
            gb[lo:hi] = ka[..., :d] + vv * ka[..., d:] + dd * x
        scale = inv_tau / n
        ctx.save_for_backward(ga.mul_(scale), gb.mul_(scale))
        return loss

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        ga, gb = ctx.saved_tensors
        g = grad_out.view(-1, 1, 1)
        return ga * g, gb * g, None, None, None


def batched_info_nce(a: torch.Tensor, b: torch.Tensor, tau: float, symmetric: bool | torch.Tensor,
                     beta_hard: float = 0.0) -> torch.Tensor:
    """Per-run InfoNCE (R,) of unit rows a, b (R, B, d): symmetric (CLIP) or x → y, per run
    when ``symmetric`` is a (R,) boolean tensor; with Robinson et al.'s hard-negative weights at
    ``beta_hard`` > 0 (:class:`BatchedInfoNCE`)."""
    flag = torch.as_tensor(symmetric, dtype=a.dtype)
    weight = (0.5 * flag).expand(a.shape[0]).contiguous()
    return BatchedInfoNCE.apply(a, b, 1.0 / tau, weight, float(beta_hard))


def train_modality_encoders(
    sigma_mis: np.ndarray,
    steps: Sequence[int] = (2000,),
    batch: int = 256,
    tau: float = 0.07,
    lr: float = 5e-3,
    feature_noise: float = 0.02,
    seed: int | Sequence[int] = 0,
    losses: Sequence[str] = LOSSES,
    dtype: torch.dtype = torch.float32,
    hard_runs: Sequence[int] = (),
    beta_hard: float = 1.0,
    init: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[list[dict[str, tuple[torch.Tensor, torch.Tensor]]], dict[str, np.ndarray]]:
    """Two bias-free linear 2→2 encoders per run (one run per entry of sigma_mis) and per loss of
    ``losses``, all trained at once with one Adam (elementwise, so the runs are independent), a
    fresh batch every step. Init as torch.nn.Linear, U(±1/√2), or ``init`` = (f, g), (R, 2, 2)
    each (then ``seed`` seeds the batches only, and may be a sequence, as numpy's seeds may).

    The runs of one σ_mis entry under the different losses start from the same maps and see the
    same batches: the losses are compared paired, and the one-directional control costs no
    sampling. ``hard_runs``: entries of sigma_mis that also train symmetric InfoNCE with
    Robinson et al.'s hard-negative weights at ``beta_hard`` (:class:`BatchedInfoNCE`), from the
    same maps on the same batches, under the key ``HARD``. Returns, per number of ``steps``
    (ascending, all from one run of max(steps) steps), {loss: (f, g)} with f, g (R, 2, 2)
    (len(hard_runs) for ``HARD``); and the initial maps and, per step count, each run's last
    batch loss (``final_loss_<k>``: (losses, R); ``final_loss_hard_<k>``).
    """
    if tau < TAU_MIN:
        raise ValueError(f"tau = {tau} < {TAU_MIN}: the batched loss needs e^(-2/tau) in "
                         f"float32's normal range")
    hard = [int(i) for i in hard_runs]
    if hard and not 0 < beta_hard <= FLOAT32_LOG_MIN * tau / 2 - 1:
        raise ValueError(f"beta_hard = {beta_hard}: expected > 0 and at most "
                         f"{FLOAT32_LOG_MIN * tau / 2 - 1:.3g} at tau = {tau} (e^(-2(1+beta)/tau) "
                         f"in float32's normal range)")
    unknown = set(losses) - set(LOSSES)
    if unknown:
        raise ValueError(f"unknown losses {sorted(unknown)}: expected some of {LOSSES}")
    marks = sorted(set(int(s) for s in steps))
    rng = np.random.default_rng(seed)
    r = len(sigma_mis)
    if init is None:
        gen = torch.Generator().manual_seed(int(seed))  # type: ignore[arg-type]
        bound = 1 / math.sqrt(2)
        f0 = (torch.rand(r, 2, 2, generator=gen, dtype=dtype) * 2 - 1) * bound
        g0 = (torch.rand(r, 2, 2, generator=gen, dtype=dtype) * 2 - 1) * bound
    else:
        f0, g0 = (torch.as_tensor(np.asarray(m), dtype=dtype).reshape(r, 2, 2).clone()
                  for m in init)
    info: dict[str, np.ndarray] = {"f_init": f0.double().numpy().copy(),
                                   "g_init": g0.double().numpy().copy()}
    nl, nh = len(losses), len(hard)
    # run l·R + r: loss l, σ entry r — every loss's runs in one tensor, one Adam — then the
    # hard-negative runs
    f = torch.cat([f0.repeat(nl, 1, 1), f0[hard]]).requires_grad_(True)  # (L·R + H, 2, 2)
    g = torch.cat([g0.repeat(nl, 1, 1), g0[hard]]).requires_grad_(True)
    symmetric = torch.tensor([name == "symmetric" for name in losses]).repeat_interleave(r)
    opt = torch.optim.Adam([f, g], lr=lr)
    out = []
    for k in range(1, marks[-1] + 1):
        th1, th2 = sample_latents(rng, (r, batch), sigma_mis)
        x1, x2 = (_features(rng, th, feature_noise).to(dtype) for th in (th1, th2))
        z1 = F.normalize(torch.bmm(torch.cat([x1.repeat(nl, 1, 1), x1[hard]]), f.transpose(1, 2)),
                         dim=-1)
        z2 = F.normalize(torch.bmm(torch.cat([x2.repeat(nl, 1, 1), x2[hard]]), g.transpose(1, 2)),
                         dim=-1)
        parts = []
        if nl:
            parts.append(batched_info_nce(z1[:nl * r], z2[:nl * r], tau, symmetric))
        if nh:
            parts.append(batched_info_nce(z1[nl * r:], z2[nl * r:], tau, True, beta_hard))
        per_run = torch.cat(parts)
        opt.zero_grad(set_to_none=True)
        per_run.sum().backward()  # each run gets its own gradient
        opt.step()
        if k in marks:
            fd, gd = f.detach().clone(), g.detach().clone()
            snap = {name: (fd[i * r:(i + 1) * r], gd[i * r:(i + 1) * r])
                    for i, name in enumerate(losses)}
            if nh:
                snap[HARD] = (fd[nl * r:], gd[nl * r:])
            out.append(snap)
            done = per_run.detach().double().numpy()
            info[f"final_loss_{k}"] = done[:nl * r].reshape(nl, r)
            if nh:
                info[f"final_loss_hard_{k}"] = done[nl * r:]
    return out, info


def angle_counts(z: np.ndarray, bins: int = 60) -> np.ndarray:
    """Counts of the embedding angles (R, n, 2) in ``bins`` equal bins on [−π, π]: (R, bins);
    vectorised over runs with one bincount."""
    ang = np.arctan2(z[..., 1], z[..., 0])
    idx = np.clip(((ang + np.pi) / (2 * np.pi) * bins).astype(np.int64), 0, bins - 1)
    r = z.shape[0]
    counts = np.bincount((idx + bins * np.arange(r)[:, None]).ravel(), minlength=r * bins)
    return counts.reshape(r, bins).astype(np.float64)


def normalised(counts: np.ndarray, pseudo_count: float = PSEUDO_COUNT) -> np.ndarray:
    p = counts + pseudo_count
    return p / p.sum(-1, keepdims=True)


def angle_histograms(z: np.ndarray, bins: int = 60, pseudo_count: float = PSEUDO_COUNT
                     ) -> np.ndarray:
    """Histograms of the embedding angles (R, n, 2) → (R, bins) on [−π, π], + ``pseudo_count``,
    normalised (the modality-gap experiment).

    The 1e-8 is added to the counts (our reading of "add 1e-8, normalize"), so an empty bin gets
    probability ~1e-8/n and D_sym between disjoint supports saturates near 2·log(n/1e-8) ≈ 55.
    """
    return normalised(angle_counts(z, bins), pseudo_count)


def evaluation_pairs(sigma_mis: np.ndarray, n_eval: int = 8000, seed: int = 1,
                     noise: float = 0.02) -> tuple[torch.Tensor, torch.Tensor]:
    """n_eval fresh input pairs (x₁, x₂) per run, (R, n_eval, 2) each: every encoder of a run
    (either loss, either step count) and the identity control are scored on the same pairs."""
    rng = np.random.default_rng(seed)
    th1, th2 = sample_latents(rng, (len(sigma_mis), n_eval), sigma_mis)
    return _features(rng, th1, noise), _features(rng, th2, noise)


def embed(x: torch.Tensor, w: torch.Tensor) -> np.ndarray:
    """Embeddings x·wᵀ (R, n, 2) in float64, unnormalised: only their angles are used."""
    with torch.no_grad():
        return torch.bmm(x, w.to(x.dtype).transpose(1, 2)).numpy()


def symmetric_kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """D_sym = KL(p‖q) + KL(q‖p) over the last axis (no ½, as published)."""
    return np.sum((p - q) * (np.log(p) - np.log(q)), axis=-1)


def trimmed_slope(values: np.ndarray, sigmas: np.ndarray, trim: float) -> TInference | None:
    """Least-squares slope over σ_mis of the per-σ trimmed means of ``values`` (K, seeds): a fixed
    linear combination Σ wₖ·T̄ₖ, wₖ = (σₖ − σ̄)/Σ(σ − σ̄)², of independent Yuen estimates (the
    runs of different σ share nothing), combined by Welch–Satterthwaite.

    Not a seed bootstrap: a resample can hold more saturated seeds than the trimming removes
    (two of twelve drawn four times happens in ~1 resample of 8), which blows up the percentile
    interval; the winsorised standard error has no such failure."""
    parts = [est.yuen(v, trim) for v in values]
    if any(p is None for p in parts):
        return None
    centred = sigmas - sigmas.mean()
    weights = centred / float((centred**2).sum())
    return est.welch(parts, weights.tolist())  # type: ignore[arg-type]


def rank_trend(values: np.ndarray, sigmas: Sequence[float], keep: np.ndarray, boot: int = 1000,
               seed: int = 0) -> dict[str, Any]:
    """Kendall's τ_b between σ_mis and every kept run's D_sym (``values``, ``keep``: (K, seeds)),
    with a percentile interval from a bootstrap that resamples the kept runs within each σ_mis
    (each run is trained on its own: nothing pairs them across σ). A rank statistic, so a run's
    size beyond its rank cannot decide it; ``keep`` drops the collapsed encoders by the rule the
    diagnosis declares (σ_min/σ_max below the collapse ratio). Undefined with fewer than two kept
    runs at some σ_mis."""
    from scipy.stats import kendalltau

    rows = [np.asarray(v, np.float64)[np.asarray(k, bool)] for v, k in zip(values, keep,
                                                                          strict=True)]
    kept = int(sum(r.size for r in rows))
    per_sigma = [int(np.size(k) - np.count_nonzero(k)) for k in keep]  # left out, per σ_mis
    method = "Kendall τ_b over kept runs, bootstrap within σ_mis"
    if any(r.size < 2 for r in rows):
        return {**est.missing("fewer than two runs left at some σ_mis", method),
                "excluded": int(np.size(keep) - kept), "excluded_per_sigma": per_sigma}
    x = np.concatenate([np.full(r.size, s) for s, r in zip(sigmas, rows, strict=True)])
    tau = float(kendalltau(x, np.concatenate(rows)).statistic)
    rng = np.random.default_rng(seed)
    draws = np.array([kendalltau(x, np.concatenate([rng.choice(r, r.size) for r in rows])).statistic
                      for _ in range(boot)])
    lo, hi = np.quantile(draws, [(1 - est.LEVEL) / 2, (1 + est.LEVEL) / 2])
    return {**est.interval(tau, lo, hi, method, kept), "excluded": int(np.size(keep) - kept),
            "excluded_per_sigma": per_sigma}


def _d_sym_summary(d: np.ndarray, trim: float) -> dict:
    """D_sym per σ_mis (the rows of ``d``, σ × seeds): every seed, the mean, the median and the
    ``trim``-trimmed mean (Yuen)."""
    return {"d_sym_per_seed": d.tolist(), "d_sym_mean": d.mean(1).tolist(),
            "d_sym_median": np.median(d, 1).tolist(),
            "d_sym_trimmed": [est.from_t(est.yuen(row, trim), f"{trim:g}-trimmed mean (Yuen)")
                              for row in d]}


def _encoder_diagnostics(f: torch.Tensor, g: torch.Tensor, p: np.ndarray, q: np.ndarray
                         ) -> dict[str, np.ndarray]:
    fd, gd = f.double().numpy(), g.double().numpy()
    sv_f = np.linalg.svd(fd, compute_uv=False)  # (R, 2), descending
    sv_g = np.linalg.svd(gd, compute_uv=False)
    return {"ratio": np.minimum(sv_f[:, 1] / sv_f[:, 0], sv_g[:, 1] / sv_g[:, 0]),
            "sv_f": sv_f, "sv_g": sv_g,
            "det_sign": np.sign(np.linalg.det(fd) * np.linalg.det(gd)),
            "occupied": np.stack([(p > 1e-6).sum(1), (q > 1e-6).sum(1)], 1)}


def run_modality_gap(
    *,
    sigmas: Sequence[float],
    seeds: int,
    steps: int,
    batch: int,
    n_eval: int,
    trim: float,
    outlier_factor: float,
    collapse_ratio: float,
    arm_sigma: float | None,
    arm_batches: Sequence[int],
    arm_beta_hard: float,
    arm_gap_share: float,
    seed: int,
) -> dict:
    """D_sym vs σ_mis for symmetric InfoNCE (as published) and its two controls, read at
    ``steps`` (the verdicts' step: the paper's 2000) and at half of them (the convergence check:
    one run, read at two step counts — the verdicts must not change between them):

    - identity encoders: the inputs' own D_sym at each σ_mis, on the same evaluation pairs — how
      much of the gap the data have before any training;
    - one-directional InfoNCE (x → y), from the same initial maps on the same batches.

    Per σ_mis: mean ± SEM (as published), median, every seed, and the ``trim``-trimmed mean with
    Yuen's standard error — the statistic the verdicts use, because a collapsed encoder's D_sym
    saturates at ≈ 2·log(n/1e-8) and a mean over seeds is decided by such seeds alone. Paired
    over seeds (same evaluation pairs, same initial maps): each loss's excess over the identity
    control and symmetric − one-directional, per σ_mis and pooled over σ_mis > 0 (the settings
    where the two conditional laws differ; independent runs, so the per-σ estimates combine by
    Welch–Satterthwaite). The slope over σ_mis of the trimmed means likewise (:func:`trimmed_slope`),
    and the rank trend of the symmetric loss's per-seed D_sym with the collapsed encoders left out
    (:func:`rank_trend`), which decides "the gap grows with σ_mis".

    Outliers (D_sym above ``outlier_factor`` × their σ's median, symmetric loss) are diagnosed
    against collapse (σ_min/σ_max < ``collapse_ratio``: a rank-1 map sends the circle to two
    antipodal points, so the histogram fills a few bins and the 1e-8 pseudo-counts make D_sym
    huge); D_sym with a pseudo-count of ½ per bin is stored beside, to show how much of an
    outlier's value the pseudo-count sets.

    The batch/negatives arm (``arm_sigma``, one σ_mis of the grid; None: none) asks whether a
    larger batch or harder negatives remove the gap: the same seeds' maps trained again at each
    of ``arm_batches`` and, on the experiment's own batches, with Robinson et al.'s hard-negative
    weights at ``arm_beta_hard`` (:func:`_batch_negatives_arm`). Published sizes are batch 256,
    2000 steps, 20 seeds.
    """
    if steps < 2 or steps % 2:
        raise ValueError(f"steps = {steps}: expected an even number ≥ 2 (the convergence check "
                         "reads the run at steps/2)")
    sig_list = [float(s) for s in sigmas]
    k_sig = len(sig_list)
    sig = np.repeat(np.asarray(sig_list, np.float64), seeds)  # run r = (σ index, seed)
    k_arm = _arm_index(sig_list, arm_sigma, batch, arm_batches)
    arm_runs = [] if k_arm is None else list(range(k_arm * seeds, (k_arm + 1) * seeds))
    marks = (steps // 2, steps)  # (the check, the verdict) under the keys (step, half_step)
    snaps, info = train_modality_encoders(sig, steps=marks, batch=batch, seed=seed,
                                          hard_runs=arm_runs, beta_hard=arm_beta_hard)
    x1, x2 = evaluation_pairs(sig, n_eval, seed=seed + 1)
    d_id = symmetric_kl(angle_histograms(x1.numpy()), angle_histograms(x2.numpy())
                        ).reshape(k_sig, seeds)
    det_init = np.sign(np.linalg.det(info["f_init"]) * np.linalg.det(info["g_init"]))
    positive = [k for k, s in enumerate(sig_list) if s > 0]
    keys = ("step", "half_step")

    d: dict[str, dict[str, np.ndarray]] = {name: {} for name in LOSSES}
    by_loss: dict[str, dict] = {name: {} for name in LOSSES}
    diag: dict[str, dict] = {}
    for key, snap, n_steps in zip(keys, snaps, marks, strict=True):
        for name in LOSSES:  # (the hard-negative runs are the arm's, below)
            f, g = snap[name]
            cp, cq = angle_counts(embed(x1, f)), angle_counts(embed(x2, g))
            p, q = normalised(cp), normalised(cq)
            dk = symmetric_kl(p, q).reshape(k_sig, seeds)
            d[name][key] = dk
            dx = _encoder_diagnostics(f, g, p, q)
            # D_sym with ½ count per bin: what an outlier's D_sym is once the 1e-8 no longer sets it
            half = symmetric_kl(normalised(cp, 0.5), normalised(cq, 0.5))
            by_loss[name][key] = {
                **_d_sym_summary(dk, trim),
                "d_sym_sem": (dk.std(1, ddof=1) / math.sqrt(seeds)).tolist() if seeds > 1 else None,
                "d_sym_half_count_per_seed": half.reshape(k_sig, seeds).tolist(),
                "min_singular_ratio_per_seed": dx["ratio"].reshape(k_sig, seeds).tolist(),
                "det_fg_sign_per_seed": dx["det_sign"].reshape(k_sig, seeds).tolist(),
                "final_loss_per_seed": info[f"final_loss_{n_steps}"][LOSSES.index(name)]
                .reshape(k_sig, seeds).tolist(),
            }
            if name == "symmetric":
                diag[key] = _diagnose(dk, dx, half.reshape(k_sig, seeds), sig_list, seeds,
                                      outlier_factor, collapse_ratio)

    def paired(a: np.ndarray, b: np.ndarray) -> tuple[list[dict], dict]:
        per = [est.yuen((a[k] - b[k]).tolist(), trim) for k in range(k_sig)]
        pooled = est.welch([per[k] for k in positive], [1 / len(positive)] * len(positive)) \
            if positive and all(per[k] is not None for k in positive) else None
        method = f"{trim:g}-trimmed mean of paired differences over seeds (Yuen)"
        return ([est.from_t(t, method) for t in per],
                est.from_t(pooled, method + "; mean over σ_mis > 0 (Welch–Satterthwaite)"))

    def paired_both(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict:
        res = {key: paired(a[key], b[key]) for key in keys}
        return {"by_sigma": [{"sigma_mis": s, **est.step_pair(res["step"][0][k],
                                                              res["half_step"][0][k])}
                             for k, s in enumerate(sig_list)],
                "pooled": est.step_pair(res["step"][1], res["half_step"][1])}

    sig_arr = np.asarray(sig_list)

    slope_method = (f"least-squares slope over σ_mis of the {trim:g}-trimmed means (Yuen), "
                    "Welch–Satterthwaite")

    def slope_of(values: dict[str, np.ndarray]) -> dict:
        return est.step_pair(*(est.from_t(trimmed_slope(values[key], sig_arr, trim), slope_method)
                               for key in keys))

    identity = dict.fromkeys(keys, d_id)
    # The trend the slope row decides on: ranks of the symmetric loss's per-seed D_sym, the
    # collapsed encoders (the diagnosis's rule) left out.
    trend = est.step_pair(*(rank_trend(d["symmetric"][key], sig_list,
                                       ~np.asarray(diag[key]["collapsed_per_seed"]), seed=seed)
                            for key in keys))

    return {
        "sigma_mis": sig_list, "seeds": seeds, "batch": batch, "n_eval": n_eval, "trim": trim,
        "losses": list(LOSSES), "pseudo_count": PSEUDO_COUNT,
        "convergence": {"steps": marks[0], "steps_doubled": marks[1], "continued": True,
                        "verdict_at": marks[1]},
        "identity": _d_sym_summary(d_id, trim),
        "by_loss": by_loss,
        "det_fg_sign_init_per_seed": det_init.reshape(k_sig, seeds).tolist(),
        "excess_over_identity": {name: paired_both(d[name], identity) for name in LOSSES},
        "symmetric_minus_x_to_y": paired_both(d["symmetric"], d["x_to_y"]),
        "slope": {
            "symmetric": slope_of(d["symmetric"]),
            "x_to_y": slope_of(d["x_to_y"]),
            "excess_symmetric": slope_of({key: d["symmetric"][key] - d_id for key in keys}),
            "identity": est.from_t(trimmed_slope(d_id, sig_arr, trim), slope_method),
        },
        "trend": {"symmetric": trend},
        "diagnosis": {"outlier_factor": outlier_factor, "collapse_ratio": collapse_ratio,
                      **{k: est.step_pair(diag["step"][k], diag["half_step"][k])
                         for k in diag["step"]}},
        "batch_negatives": None if k_arm is None else _batch_negatives_arm(
            snaps, info, arm_runs, x1[arm_runs], x2[arm_runs], d_id[k_arm], arm_sigma,
            arm_batches, batch, arm_beta_hard, arm_gap_share, marks, trim, collapse_ratio, seed),
    }


def _arm_index(sigmas: list[float], arm_sigma: float | None, batch: int,
               arm_batches: Sequence[int]) -> int | None:
    """The index in ``sigmas`` of the batch/negatives arm's σ_mis (None: no arm); refused unless
    it is a σ_mis > 0 of the grid and the batch sizes include the experiment's own."""
    if arm_sigma is None:
        return None
    hits = [k for k, s in enumerate(sigmas) if math.isclose(s, arm_sigma, abs_tol=1e-12)]
    if not hits or arm_sigma <= 0:
        raise ValueError(f"arm_sigma = {arm_sigma}: expected a σ_mis > 0 of sigmas {sigmas}")
    if batch not in arm_batches:
        raise ValueError(f"arm_batches = {list(arm_batches)}: expected the experiment's batch "
                         f"({batch}) among them (its run is the arm's reference)")
    return hits[0]


def _batch_negatives_arm(
    snaps: list[dict[str, tuple[torch.Tensor, torch.Tensor]]], info: dict[str, np.ndarray],
    runs: list[int], x1: torch.Tensor, x2: torch.Tensor, d_id: np.ndarray, sigma: float,
    batches: Sequence[int], batch: int, beta_hard: float, share: float, marks: tuple[int, int],
    trim: float, collapse_ratio: float, seed: int,
) -> dict[str, Any]:
    """Can a larger batch or harder negatives remove the gap? At one σ_mis, the experiment's
    seeds (their initial maps, ``runs``) trained again at every batch size of ``batches`` (fresh
    batches, seeded by (seed, batch)) and, on the experiment's own batches, with hard-negative
    weights at ``beta_hard``; the experiment's symmetric run is the reference (its batch is
    ``batch``). Every encoder is scored on the experiment's evaluation pairs of those runs, so
    each arm is paired over seeds with the reference and with the inputs' own gap ``d_id``.

    Per arm and step count: D_sym per seed and its trimmed mean; the excess over the inputs'
    gap; its difference from the reference's (D_sym(arm) − D_sym(reference)); and the statistic
    the rule reads, [D_sym(arm) − D_sym(identity)] − ``share``·[D_sym(
    reference) − D_sym(identity)], paired over seeds, the seeds where the arm's or the
    reference's encoder collapsed (σ_min/σ_max < ``collapse_ratio``, the diagnosis's rule) left
    out, ``trim``-trimmed mean with Yuen's SE. For the reference itself it is (1 − share) × its
    own excess, so the rule also asks that the reference keeps a gap."""
    keys = ("step", "half_step")
    init = (info["f_init"][runs], info["g_init"][runs])
    sig = np.full(len(runs), sigma)
    trained: list[tuple[dict[str, Any], list[tuple[torch.Tensor, torch.Tensor]]]] = []
    for b in sorted(set(int(x) for x in batches)):
        if b == batch:
            fg = [snap["symmetric"] for snap in snaps]
            fg = [(f[runs], g[runs]) for f, g in fg]
            arm = {"name": f"batch {b} (the experiment's run)", "reference": True}
        else:
            arm_snaps, _ = train_modality_encoders(sig, steps=marks, batch=b, seed=[seed, b],
                                                   losses=("symmetric",), init=init)
            fg = [snap["symmetric"] for snap in arm_snaps]
            arm = {"name": f"batch {b}", "reference": False}
        trained.append(({**arm, "batch": b, "beta_hard": 0.0}, fg))
    trained.append(({"name": f"batch {batch}, hard negatives (β = {beta_hard:g})",
                     "reference": False, "batch": batch, "beta_hard": beta_hard},
                    [snap[HARD] for snap in snaps]))

    scored = []
    for arm, fg in trained:
        d_sym, collapsed = {}, {}
        for key, (f, g) in zip(keys, fg, strict=True):
            p, q = angle_histograms(embed(x1, f)), angle_histograms(embed(x2, g))
            d_sym[key] = symmetric_kl(p, q)
            collapsed[key] = _encoder_diagnostics(f, g, p, q)["ratio"] < collapse_ratio
        scored.append((arm, d_sym, collapsed))
    (_, d_ref, coll_ref), = [x for x in scored if x[0]["reference"]]

    method = f"{trim:g}-trimmed mean of paired differences over seeds, collapsed left out (Yuen)"
    out = []
    for arm, d_sym, collapsed in scored:
        per: dict[str, dict[str, Any]] = {k: {} for k in (
            "d_sym_trimmed", "excess", "minus_reference", "minus_share_of_reference", "excluded")}
        for key in keys:
            keep = ~collapsed[key] & ~coll_ref[key]
            excess = d_sym[key] - d_id
            stat = excess - share * (d_ref[key] - d_id)
            per["d_sym_trimmed"][key] = est.from_t(est.yuen(d_sym[key][keep], trim),
                                                   f"{trim:g}-trimmed mean (Yuen), kept seeds")
            per["excess"][key] = est.from_t(est.yuen(excess[keep], trim), method)
            # shown beside the rule: how far the arm moves the gap from the experiment's run
            per["minus_reference"][key] = est.from_t(est.yuen((d_sym[key] - d_ref[key])[keep],
                                                              trim), method)
            per["minus_share_of_reference"][key] = est.from_t(est.yuen(stat[keep], trim), method)
            per["excluded"][key] = int(np.count_nonzero(~keep))
        out.append({**arm, **{k: est.step_pair(v["step"], v["half_step"]) for k, v in per.items()},
                    "d_sym_per_seed": est.step_pair(*(d_sym[k].tolist() for k in keys)),
                    "collapsed_per_seed": est.step_pair(*(collapsed[k].tolist() for k in keys))})
    return {"sigma_mis": sigma, "seeds": len(runs), "reference_batch": batch,
            "batches": sorted(set(int(x) for x in batches)), "beta_hard": beta_hard,
            "gap_share": share, "collapse_ratio": collapse_ratio, "trim": trim,
            "identity_d_sym_per_seed": d_id.tolist(),
            "identity_d_sym_trimmed": est.from_t(est.yuen(d_id, trim),
                                                 f"{trim:g}-trimmed mean (Yuen)"),
            "arms": out}


def _diagnose(dk: np.ndarray, dx: dict[str, np.ndarray], half: np.ndarray, sigmas: list[float],
              seeds: int, outlier_factor: float, collapse_ratio: float) -> dict:
    """Outlier seeds (D_sym > outlier_factor × their σ's median) against collapsed encoders
    (σ_min/σ_max < collapse_ratio): the cross-table, the share of outliers that collapsed and of
    collapsed seeds that are outliers (Wilson intervals), and each outlier's particulars."""
    k_sig = len(sigmas)
    median = np.median(dk, axis=1)
    is_outlier = dk > outlier_factor * median[:, None]
    collapsed = (dx["ratio"] < collapse_ratio).reshape(k_sig, seeds)
    both = int((is_outlier & collapsed).sum())
    outliers = []
    for k, j in zip(*np.nonzero(is_outlier), strict=True):
        r = k * seeds + j
        outliers.append({
            "sigma_mis": sigmas[k], "seed": int(j), "d_sym": float(dk[k, j]),
            "median_d_sym": float(median[k]), "d_sym_half_count": float(half[k, j]),
            "min_singular_ratio": float(dx["ratio"][r]), "collapsed": bool(collapsed[k, j]),
            "singular_values_f": dx["sv_f"][r].tolist(), "singular_values_g": dx["sv_g"][r].tolist(),
            "det_fg_sign": float(dx["det_sign"][r]), "occupied_bins": dx["occupied"][r].tolist(),
        })
    return {
        "cross": {"outlier_and_collapsed": both,
                  "outlier_not_collapsed": int((is_outlier & ~collapsed).sum()),
                  "collapsed_not_outlier": int((~is_outlier & collapsed).sum()),
                  "neither": int((~is_outlier & ~collapsed).sum())},
        "collapsed_share_of_outliers": est.wilson(both, int(is_outlier.sum())),
        "outlier_share_of_collapsed": est.wilson(both, int(collapsed.sum())),
        "collapsed_per_seed": collapsed.tolist(),
        "outliers": outliers,
    }
