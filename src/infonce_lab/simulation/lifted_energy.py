"""The lifted energy of symmetric InfoNCE (the geometry paper's F^Sym), checked numerically on S¹.

In the large-batch limit the symmetric (CLIP) loss over N pairs, minus log(N·V_κ(τ)), tends to

    J^Sym = ½[F(ρ₁) + F(ρ₂)] − ½[KL(ρ₁‖ρ̃₂) + KL(ρ₂‖ρ̃₁)],   F(ρ) = (1/τ)·∫U ρ dμ − H(ρ),

with ρ̃ = ρ ⊛ κ_τ/V_κ the kernel-smoothed densities (each direction's log-partition term is the
cross-entropy against the *other* modality's smoothed density: −H_×(ρ₁, ρ̃₂) = −H(ρ₁) −
KL(ρ₁‖ρ̃₂)). The paper's lifted energy F^Sym writes ρ for ρ̃ (the sharp-kernel limit, τ → 0).
Here both sides are computed for two known densities:

- ρ₁ = w·vM(0, κ) + (1 − w)·vM(π, κ) (the modality-gap toy's latent law, E.5(3)) and ρ₂ the law
  of θ₁ + δ + σ·ε, ε ~ N(0, 1) — a rotated and blurred copy, so the two marginals differ and the
  coupling term is large;
- the right side by quadrature: every density is a Fourier series (vM: I_k(κ)/I₀(κ); the
  shift: e^{−ikδ}; the blur: e^{−k²σ²/2}; the kernel exp(cos φ/τ)/V: I_k(1/τ)/I₀(1/τ)), summed
  on a uniform grid by an inverse FFT, integrated by the trapezoidal rule (spectrally accurate
  for smooth periodic integrands);
- the left side by Monte Carlo: i.i.d. batches of N pairs, the in-batch log-partition terms of
  both directions (positives included, as in the loss). The alignment term −E_π[s]/τ appears on
  both sides and cancels; it is taken exactly (E_π[cos(θ₁ − θ₂)] = cos δ·e^{−σ²/2}), so the
  Monte Carlo only carries the part the large-batch limit is about.

The coefficient of the coupling is measured too: c = (½[F(ρ₁)+F(ρ₂)] − J_MC)/(KL(ρ₁‖ρ̃₂) +
KL(ρ₂‖ρ̃₁)), ½ by the derivation above (the BLOG's normalisation; the summary's D^Sym without
the ½ would make it 1, and no coupling 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from scipy import special

from infonce_lab.evaluation.stats import TInference
from infonce_lab.simulation import estimates as est
from infonce_lab.simulation.large_batch import log_vmf_volume


def _bessel_ratio(k: np.ndarray, x: float) -> np.ndarray:
    """I_k(x)/I₀(x), through the exponentially scaled ive (stable for the large x = 1/τ)."""
    return special.ive(k, x) / special.ive(0, x)


def densities(kappa: float, weight: float, shift: float, sigma: float, grid: int,
              taus: Sequence[float], kmax: int | None = None) -> dict:
    """ρ₁, ρ₂ and, per τ, ρ̃₁, ρ̃₂ on θ_j = 2πj/grid (densities w.r.t. arc length, ∫ = 1)."""
    kmax = grid // 2 if kmax is None else kmax
    k = np.arange(kmax + 1)
    c1 = (weight + (1 - weight) * (-1.0) ** k) * _bessel_ratio(k, kappa)
    c2 = c1 * np.exp(-1j * k * shift - 0.5 * (k * sigma) ** 2)

    def on_grid(c: np.ndarray) -> np.ndarray:
        spec = np.zeros(grid // 2 + 1, dtype=complex)
        spec[: c.size] = c[: grid // 2 + 1] * grid / (2 * math.pi)
        return np.fft.irfft(spec, n=grid)

    out = {"theta": 2 * math.pi * np.arange(grid) / grid, "rho1": on_grid(c1), "rho2": on_grid(c2),
           "smoothed": {}}
    for tau in taus:
        kt = _bessel_ratio(k, 1 / tau)
        out["smoothed"][tau] = (on_grid(c1 * kt), on_grid(c2 * kt))
    return out


def _integral(f: np.ndarray) -> float:
    return float(f.sum() * 2 * math.pi / f.size)


def entropy(rho: np.ndarray) -> float:
    return -_integral(rho * np.log(rho))


def kl(p: np.ndarray, q: np.ndarray) -> float:
    return _integral(p * np.log(p / q))


def sample_pairs(rng: np.random.Generator, n: int, kappa: float, weight: float, shift: float,
                 sigma: float) -> tuple[np.ndarray, np.ndarray]:
    centre = np.where(rng.random(n) < weight, 0.0, math.pi)
    th1 = rng.vonmises(centre, kappa)
    return th1, th1 + shift + sigma * rng.standard_normal(n)


@torch.no_grad()
def log_partition_terms(th1: np.ndarray, th2: np.ndarray, tau: float, chunk: int = 2048
                        ) -> float:
    """½[mean_i log Σ_j e^{s_ij/τ} + mean_j log Σ_i e^{s_ij/τ}] with s_ij = cos(θ₁ᵢ − θ₂ⱼ), in row
    chunks. float32: e^{(s−1)/τ} ∈ [e^{−2/τ}, 1] loses nothing that matters for τ ≥ 0.025, and
    the sums' relative rounding (~1e-6) is far below the 1e-2 nats the check resolves."""
    z1 = torch.from_numpy(np.stack([np.cos(th1), np.sin(th1)], 1).astype(np.float32))
    z2 = torch.from_numpy(np.stack([np.cos(th2), np.sin(th2)], 1).astype(np.float32))
    inv = 1.0 / tau
    rows, cols = [], torch.zeros(len(th2), dtype=torch.float32)
    z1s, z2t = z1 * inv, z2.T.contiguous()
    for i in range(0, len(th1), chunk):
        e = torch.addmm(torch.tensor(-inv), z1s[i:i + chunk], z2t).exp_()  # ≤ 1: no overflow
        rows.append(e.sum(1))
        cols += e.sum(0)
    row = float(torch.cat(rows).log().double().mean()) + inv
    col = float(cols.log().double().mean()) + inv
    return 0.5 * (row + col)


def run_lifted_energy(
    *,
    kappa: float,
    weight: float,
    shift: float,
    sigma: float,
    taus: Sequence[float],
    quadrature_taus: Sequence[float],
    ns: Sequence[int],
    replicates: int,
    grid: int,
    seed: int,
) -> dict:
    """J^Sym by Monte Carlo at each τ in ``taus`` and batch size in ``ns`` against the lifted
    energy by quadrature, with smoothed (ρ̃) and unsmoothed (ρ) densities; the coupling's
    coefficient; and, by quadrature alone over ``quadrature_taus``, the lifting error
    F^Sym(ρ) − J^Sym = ½[KL(ρ₁‖ρ̃₂) + KL(ρ₂‖ρ̃₁) − KL(ρ₁‖ρ₂) − KL(ρ₂‖ρ₁)] (→ 0 as the kernel
    sharpens).

    Each (τ, N) has its own ``replicates`` independent batches: the estimates are t over
    replicates.
    """
    all_taus = sorted(set(taus) | set(quadrature_taus), reverse=True)
    dens = densities(kappa, weight, shift, sigma, grid, all_taus)
    r1, r2 = dens["rho1"], dens["rho2"]
    if min(r1.min(), r2.min()) <= 0:
        raise ValueError("a density is not positive on the grid: raise kappa's resolution")
    e_s = math.cos(shift) * math.exp(-0.5 * sigma**2)  # E_π[cos(θ₁ − θ₂)]
    h1, h2 = entropy(r1), entropy(r2)
    kl_plain = kl(r1, r2) + kl(r2, r1)

    def energies(tau: float) -> dict:
        t1, t2 = dens["smoothed"][tau]
        half_f = 0.5 * ((-e_s / tau - h1) + (-e_s / tau - h2))
        kl_smooth = kl(r1, t2) + kl(r2, t1)
        return {"tau": tau, "half_f_sum": half_f, "kl_smoothed_sum": kl_smooth,
                "kl_sum": kl_plain, "j_sym_smoothed": half_f - 0.5 * kl_smooth,
                "f_sym_lifted": half_f - 0.5 * kl_plain,
                "lifting_error": 0.5 * (kl_smooth - kl_plain)}

    quad = [energies(t) for t in quadrature_taus]
    rng = np.random.default_rng(seed)
    mc = []
    for tau in taus:
        q = energies(tau)
        log_v = log_vmf_volume(tau, 2)
        per_n = []
        for n in ns:
            vals = []
            for _ in range(replicates):
                th1, th2 = sample_pairs(rng, n, kappa, weight, shift, sigma)
                vals.append(-e_s / tau + log_partition_terms(th1, th2, tau) - math.log(n) - log_v)
            t = est.mean_t(vals)
            entry = {"n": n, "j_mc": est.from_t(t, "t over replicates")}
            if t is not None:
                # minus_no_coupling: ½[F(ρ₁)+F(ρ₂)] alone (what E.4 would be with no KL term)
                for key, energy in (("minus_smoothed", "j_sym_smoothed"),
                                    ("minus_lifted", "f_sym_lifted"),
                                    ("minus_no_coupling", "half_f_sum")):
                    entry[key] = est.from_t(est.shifted(t, q[energy]), "t over replicates")
                d = q["kl_smoothed_sum"]
                entry["coupling_coefficient"] = est.from_t(
                    TInference((q["half_f_sum"] - t.mean) / d, t.se / d, t.df, t.n),
                    "t over replicates")
            per_n.append(entry)
        mc.append({**q, "log_v": log_v, "by_n": per_n})
    return {
        "kappa": kappa, "weight": weight, "shift": shift, "sigma": sigma, "grid": grid,
        "replicates": replicates, "n": list(ns), "e_pos_similarity": e_s,
        "entropy": [h1, h2], "quadrature": quad, "monte_carlo": mc,
    }
