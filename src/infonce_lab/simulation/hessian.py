"""Hessian sharpening of InfoNCE on spheres (annealing paper §5, App. C.3; our analysis and test).

Per anchor i with positive j and candidates k ≠ i (the positive among them), the loss
ℓ_i(z_i) = −log softmax_k(β·s_ik)[j] with s_ik = z_iᵀz_k has the Riemannian Hessian on the sphere

    H = β²·Cov_{k∼p_i}[∇s_ik] + β·(E_{k∼p_i}[H_ik] − H_ij),

with ∇s_ik = P_z z_k and H_ik = −s_ik·P_z for the linear map z ↦ z_kᵀz (P_z = I − zzᵀ). In an
orthonormal tangent basis E (d × (d−1)) this is β²·Cov_p[Eᵀz_k] − β·(E_p[s_ik] − s_ij)·I.

Everything here is float64 numpy and vectorised over anchors and finite-difference stencils.
``sim`` is the plain dot product; a similarity scale κ_s (our S1) is absorbed into β.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from infonce_lab.simulation import estimates as est
from infonce_lab.simulation.landscape import S1_PAIRS, S1_TRAP_ANGLES, s1_angles_to_z

# ----------------------------------------------------------------------------------------------
# Geometry of the unit sphere


def tangent_basis(z: np.ndarray) -> np.ndarray:
    """(..., d) unit vectors → (..., d, d−1) orthonormal bases of their tangent spaces.

    The Householder reflection H = I − 2uuᵀ/‖u‖² with u = z + sign(z₁)e₁ sends e₁ to −sign(z₁)z,
    so its other columns are orthonormal and orthogonal to z. The sign choice keeps ‖u‖² ≥ 2
    (no cancellation), and the map is smooth enough to vectorise without branches.
    """
    z = np.asarray(z, dtype=np.float64)
    d = z.shape[-1]
    u = z.copy()
    u[..., 0] += np.where(z[..., 0] >= 0, 1.0, -1.0)
    h = np.eye(d) - 2.0 * u[..., :, None] * u[..., None, :] / (u * u).sum(-1)[..., None, None]
    return h[..., :, 1:]


def exp_map(z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Exponential map of the unit sphere at z applied to the tangent vector v (both (..., d))."""
    r = np.linalg.norm(v, axis=-1, keepdims=True)
    # sin(r)/r written through np.sinc so that r = 0 (the stencil centre) needs no branch.
    return np.cos(r) * z + np.sinc(r / np.pi) * v


# ----------------------------------------------------------------------------------------------
# Per-anchor loss, gradient and Hessian


def _lse_exact(x: np.ndarray) -> np.ndarray:
    """log Σ exp(x) over the last axis, keeping relative accuracy when one term dominates.

    Written as max + log1p(Σ_{others} e^{x−max}) rather than max + log(Σ e^{x−max}): at a minimizer
    the loss is ~e^{−β·gap} (e.g. 1e-80) and the plain form would round it to 0, which would make
    the finite-difference Hessian there pure noise.
    """
    m = x.max(-1, keepdims=True)
    e = np.exp(x - m)
    top = np.argmax(x, axis=-1)[..., None]
    np.put_along_axis(e, top, 0.0, axis=-1)
    return m[..., 0] + np.log1p(e.sum(-1))


def _positive_rows(candidates: np.ndarray, positive: np.ndarray) -> np.ndarray:
    idx = np.broadcast_to(np.asarray(positive), candidates.shape[:-2])[..., None, None]
    return np.take_along_axis(candidates, idx, axis=-2)[..., 0, :]


def anchor_loss(
    z: np.ndarray, candidates: np.ndarray, positive: np.ndarray | int, beta: float
) -> np.ndarray:
    """ℓ = −log softmax_k(β·zᵀa_k)[positive] for z (..., d) and candidates (..., K, d).

    The logits are formed as β·(a_k − a_j)ᵀz, so the positive's logit is exactly 0 and the loss
    keeps its relative precision at a minimizer (see :func:`_lse_exact`).
    """
    z, candidates = np.broadcast_arrays(
        np.asarray(z, np.float64)[..., None, :], np.asarray(candidates, np.float64)
    )
    z = z[..., 0, :]
    a_j = _positive_rows(candidates, positive)
    x = beta * np.einsum("...kd,...d->...k", candidates - a_j[..., None, :], z)
    return _lse_exact(x)


def _softmax_and_diffs(
    z: np.ndarray, candidates: np.ndarray, positive: np.ndarray | int, beta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """p_k, s_k − s_j and the tangent coordinates of ∇s_k − ∇s_j, all relative to the positive.

    Working with differences to the positive keeps the exponentially small Hessian at a minimizer
    accurate to relative precision instead of absolute (the terms cancel to ~e^{−β·gap}).
    """
    z = np.asarray(z, np.float64)
    candidates = np.asarray(candidates, np.float64)
    e = tangent_basis(z)
    a_j = _positive_rows(candidates, positive)
    diff = candidates - a_j[..., None, :]
    ds = np.einsum("...kd,...d->...k", diff, z)  # s_k − s_j, exactly 0 at k = j
    x = beta * ds
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dg = np.einsum("...kd,...dm->...km", diff, e)  # Eᵀ(P_z a_k − P_z a_j) = Eᵀ(a_k − a_j)
    return p, ds, dg


def hessian_terms(
    z: np.ndarray,
    candidates: np.ndarray,
    positive: np.ndarray | int,
    beta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The two D.6 terms separately: β²·Cov_p[∇s_k] (..., d−1, d−1) and the scalar
    −β·(E_p[s_k] − s_j) (...) multiplying the identity, i.e. β·(E_p[H_k] − H_j)."""
    p, ds, dg = _softmax_and_diffs(z, candidates, positive, beta)
    mu = np.einsum("...k,...km->...m", p, dg)  # μ − ∇s_j
    centred = dg - mu[..., None, :]  # ∇s_k − μ, formed from differences to the positive
    cov = np.einsum("...k,...km,...kn->...mn", p, centred, centred)
    lin = -np.einsum("...k,...k->...", p, ds)  # −(E_p[s_k] − s_j)
    return beta**2 * cov, beta * lin


def riemannian_hessian(
    z: np.ndarray,
    candidates: np.ndarray,
    positive: np.ndarray | int,
    beta: float,
) -> np.ndarray:
    """App. C.3's per-anchor Hessian of ℓ w.r.t. z, Riemannian on S^{d−1}, in the coordinates of
    :func:`tangent_basis`: the module docstring's H (our derivation on the sphere).

    z: (..., d) unit anchors; candidates: (..., K, d) the other points (the positive included);
    positive: (...) index of the positive among the K candidates. Returns (..., d−1, d−1).
    """
    cov, lin = hessian_terms(z, candidates, positive, beta)
    return cov + lin[..., None, None] * np.eye(cov.shape[-1])


# ----------------------------------------------------------------------------------------------
# Finite differences in tangent coordinates


def central_fd_hessian(f: Callable[[np.ndarray], np.ndarray], n: int, h: float) -> np.ndarray:
    """Hessian at 0 of f: (m, n) offsets → (..., m) values, by central differences with
    Richardson extrapolation; returns (..., n, n).

    The plain central stencil has O(h²) error; combining steps h and 2h, (4·D(h) − D(2h))/3,
    cancels it, which lets h stay large enough (rounding ~ ε/h²) for the ≤ 1e-5 agreement test
    at β = 200. All stencil points (and any batch of functions f returns) go through f at once.
    """
    eye = np.eye(n)
    iu, ju = np.triu_indices(n, k=1)
    signs = ((1, 1), (1, -1), (-1, 1), (-1, -1))

    def stencil(step: float) -> np.ndarray:
        pts = [np.zeros((1, n)), step * eye, -step * eye]
        pts += [step * (sa * eye[iu] + sb * eye[ju]) for sa, sb in signs]
        vals = f(np.concatenate(pts, axis=0))
        f0, fp, fm = vals[..., :1], vals[..., 1 : n + 1], vals[..., n + 1 : 2 * n + 1]
        q = vals[..., 2 * n + 1 :].reshape(*vals.shape[:-1], 4, -1)
        hess = np.zeros((*vals.shape[:-1], n, n))
        hess[..., np.arange(n), np.arange(n)] = (fp - 2 * f0 + fm) / step**2
        off = (q[..., 0, :] - q[..., 1, :] - q[..., 2, :] + q[..., 3, :]) / (4 * step**2)
        hess[..., iu, ju] = off
        hess[..., ju, iu] = off
        return hess

    return (4 * stencil(h) - stencil(2 * h)) / 3


def default_step(beta: float, scale: float = 1.0) -> float:
    """FD step for a loss whose derivatives grow like β per order (logits β·s with |s| ≤ scale)."""
    return 0.02 / max(1.0, beta * scale)


def fd_anchor_hessian(
    z: np.ndarray, candidates: np.ndarray, positive: np.ndarray | int, beta: float,
    h: float | None = None,
) -> np.ndarray:
    """Central-difference Riemannian Hessian of ℓ at z: f(c) = ℓ(exp_z(E c)), c ∈ ℝ^{d−1}.

    Batched like :func:`riemannian_hessian` (z (..., d), candidates (..., K, d), positive (...)).
    The exponential map is a second-order retraction, so the Euclidean Hessian of f at c = 0 is
    the Riemannian Hessian even away from critical points.
    """
    z = np.asarray(z, np.float64)
    candidates = np.asarray(candidates, np.float64)
    e = tangent_basis(z)
    h = default_step(beta, float(np.abs(candidates).max())) if h is None else h
    pos = np.broadcast_to(np.asarray(positive), z.shape[:-1])[..., None]

    def f(c: np.ndarray) -> np.ndarray:  # c: (m, d−1) → (..., m)
        v = np.einsum("...dn,mn->...md", e, c)
        return anchor_loss(exp_map(z[..., None, :], v), candidates[..., None, :, :], pos, beta)

    return central_fd_hessian(f, z.shape[-1] - 1, h)


# ----------------------------------------------------------------------------------------------
# Whole configurations: L(Z, β) = mean over ordered positive pairs (i, j) of ℓ_ij


def _anchor_candidates(n: int, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each pair (i, j): indices of i's candidates k ≠ i and the positive's place among them."""
    i, j = pairs[:, 0], pairs[:, 1]
    m = np.arange(n - 1)
    others = m[None, :] + (m[None, :] >= i[:, None])  # skip k = i without a Python loop
    return others, j - (j > i)


def config_loss(z: np.ndarray, pairs: np.ndarray, beta: float) -> np.ndarray:
    """L(Z, β) for configurations z (..., N, d) and ordered positive pairs (P, 2)."""
    pairs = np.asarray(pairs)
    others, pos = _anchor_candidates(z.shape[-2], pairs)
    anchors = z[..., pairs[:, 0], :]  # (..., P, d)
    cands = z[..., others, :]  # (..., P, N−1, d)
    pos = np.broadcast_to(pos, anchors.shape[:-1])
    return anchor_loss(anchors, cands, pos, beta).mean(-1)


def config_anchor_hessians(z: np.ndarray, pairs: np.ndarray, beta: float) -> np.ndarray:
    """D.6 per-anchor blocks for every pair of a configuration z (N, d): (P, d−1, d−1)."""
    others, pos = _anchor_candidates(z.shape[0], np.asarray(pairs))
    return riemannian_hessian(z[pairs[:, 0]], z[others], pos, beta)


def config_fd_hessian(
    z: np.ndarray, pairs: np.ndarray, beta: float, h: float | None = None
) -> np.ndarray:
    """Central-difference Riemannian Hessian of L(·, β) on (S^{d−1})^N: (N(d−1), N(d−1))."""
    n, d = z.shape
    e = tangent_basis(z)  # (N, d, d−1)
    h = default_step(beta) if h is None else h

    def f(c: np.ndarray) -> np.ndarray:
        v = np.einsum("ndm,bnm->bnd", e, c.reshape(-1, n, d - 1))
        return config_loss(exp_map(z[None], v), pairs, beta)

    return central_fd_hessian(f, n * (d - 1), h)


def u0(z: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per-pair bracket of U_0 (annealing paper §2.2, App. C.2): max_{k≠i} s_ik − s_ij ≥ 0."""
    others, pos = _anchor_candidates(z.shape[0], np.asarray(pairs))
    s = np.einsum("pkd,pd->pk", z[others], z[pairs[:, 0]])
    return s.max(-1) - np.take_along_axis(s, pos[:, None], axis=-1)[:, 0]


# ----------------------------------------------------------------------------------------------
# The scaling experiment


@dataclass(frozen=True)
class SphereConfig:
    """A configuration Z (N, d) of unit vectors with ordered positive pairs (P, 2)."""

    name: str
    z: np.ndarray
    pairs: np.ndarray


def s1_trap() -> SphereConfig:
    """Our S1 trap: angles (0°, 180°, 90°, 270°); each anchor's two negatives tie at s = 0."""
    return SphereConfig("s1_trap", s1_angles_to_z(S1_TRAP_ANGLES), S1_PAIRS)


def s1_trap_perturbed(delta: float = 0.1) -> SphereConfig:
    """The trap with the pair (3, 4) turned by δ: every anchor's two negatives now differ by
    2·sin δ, so the β² regime of the tied trap should cross over to ‖H‖ ∝ β once β·δ ≫ 1."""
    theta = S1_TRAP_ANGLES + np.array([0.0, 0.0, delta, delta])
    return SphereConfig("s1_trap_perturbed", s1_angles_to_z(theta), S1_PAIRS)


def s1_minimizer(spread: float = 0.2) -> SphereConfig:
    """A global minimizer of U_0 on (S¹)^4 with a unique positive maximum for every anchor."""
    return SphereConfig("s1_minimizer", s1_angles_to_z([0.0, spread, np.pi, np.pi + spread]),
                        S1_PAIRS)


def _pairs_of(n_pairs: int) -> np.ndarray:
    a = 2 * np.arange(n_pairs)
    return np.concatenate([np.stack([a, a + 1], 1), np.stack([a + 1, a], 1)])


def random_configs(
    count: int, n_pairs: int = 3, dim: int = 3, rng: np.random.Generator | None = None,
    min_u0: float = 1e-3,
) -> list[SphereConfig]:
    """Uniform random configurations with U_0 > min_u0 (non-optimal; rejection over batches)."""
    rng = np.random.default_rng(0) if rng is None else rng
    pairs = _pairs_of(n_pairs)
    out: list[SphereConfig] = []
    while len(out) < count:
        z = rng.standard_normal((4 * count, 2 * n_pairs, dim))
        z /= np.linalg.norm(z, axis=-1, keepdims=True)
        keep = [zz for zz in z if u0(zz, pairs).mean() > min_u0]
        out += [SphereConfig(f"random_{len(out) + k}", zz, pairs) for k, zz in enumerate(keep)]
    return out[:count]


def random_minimizer(
    n_pairs: int = 3, dim: int = 3, jitter: float = 0.15, rng: np.random.Generator | None = None
) -> SphereConfig:
    """Pairs placed near well separated centres: every anchor's positive is its unique maximum."""
    rng = np.random.default_rng(1) if rng is None else rng
    pairs = _pairs_of(n_pairs)
    while True:
        centres = rng.standard_normal((n_pairs, dim))
        z = np.repeat(centres, 2, axis=0) / np.linalg.norm(centres, axis=-1).repeat(2)[:, None]
        z = z + jitter * rng.standard_normal(z.shape)
        z /= np.linalg.norm(z, axis=-1, keepdims=True)
        gaps = -sphere_brackets(z, pairs)[0]
        if gaps.min() > 0.2:  # a unique positive maximum with a clear margin
            return SphereConfig("random_minimizer", z, pairs)


def sphere_brackets(z: np.ndarray, pairs: np.ndarray, kappa_s: float = 1.0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """For configurations z (..., N, d): per pair, best negative − positive similarity (< 0 iff the
    positive is the strict maximum) and the positive similarity s_ij."""
    others, pos = _anchor_candidates(z.shape[-2], pairs)
    s = kappa_s * np.einsum("...pkd,...pd->...pk", z[..., others, :], z[..., pairs[:, 0], :])
    s_pos = np.take_along_axis(s, np.broadcast_to(pos[:, None], s.shape[:-1] + (1,)), -1)[..., 0]
    neg = s.copy()
    np.put_along_axis(neg, np.broadcast_to(pos[:, None], s.shape[:-1] + (1,)), -np.inf, -1)
    return neg.max(-1) - s_pos, s_pos


def _fro(x: np.ndarray) -> np.ndarray:
    """Frobenius norm over the last two axes without underflow (‖H‖ ~ e^{−400} at a minimizer)."""
    s = np.abs(x).max(axis=(-2, -1), keepdims=True)
    s = np.where(s > 0, s, 1.0)
    return np.linalg.norm(x / s, axis=(-2, -1)) * s[..., 0, 0]


def formula_vs_fd(
    z: np.ndarray, candidates: np.ndarray, positive: np.ndarray | int, beta: float,
    fd_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Relative error ‖H_D.6 − H_FD‖_F/‖H_D.6‖_F per anchor, and a flag where the two D.6 terms
    cancel (‖H‖ < 1e-6 of their size, e.g. the S1 trap at β = 1, where H = 0 exactly): there a
    relative error is meaningless and the error is measured against the terms' size instead.
    ``fd_scale`` multiplies the finite-difference step (0.5: the step-halving check)."""
    cov, lin = hessian_terms(z, candidates, positive, beta)
    h = cov + lin[..., None, None] * np.eye(cov.shape[-1])
    step = fd_scale * default_step(beta, float(np.abs(np.asarray(candidates)).max()))
    err = _fro(h - fd_anchor_hessian(z, candidates, positive, beta, h=step))
    size = _fro(cov) + np.abs(lin) * np.sqrt(cov.shape[-1])
    norm = _fro(h)
    cancel = norm < 1e-6 * size
    return err / np.where(cancel, size, norm), cancel


def hessian_scaling(
    configs: Sequence[SphereConfig], betas: Sequence[float] = (1, 2, 5, 10, 20, 50, 100, 200)
) -> list[dict]:
    """For each configuration and β: ‖H‖₂ of L(·, β) by finite differences, the App. C.3 per-anchor
    blocks and their agreement with per-anchor finite differences, and the fitted slopes of log‖H‖
    vs log β (the whole range and the last two β, the asymptotic one).

    The per-anchor coefficient ‖H_i‖/β at the largest β is reported next to |s_ik* − s_ij| (our
    analysis of App. C.3). At a minimizer ‖H‖ ~ β²e^{−β·gap}, so a power-law slope means nothing
    there; the decay rate −Δlog‖H‖/Δβ between the two largest β is reported against the margin.
    """
    betas = np.asarray(betas, np.float64)
    out = []
    for cfg in configs:
        z, pairs = cfg.z, cfg.pairs
        others, pos = _anchor_candidates(z.shape[0], pairs)
        full, anchor, rel_err, rel_err_half, n_cancel, fit_ok = [], [], [], [], 0, []
        for beta in betas:
            h_full = config_fd_hessian(z, pairs, beta)
            full.append(np.linalg.norm(h_full, 2))
            h_formula = config_anchor_hessians(z, pairs, beta)
            anchor.append(np.linalg.norm(h_formula, 2, axis=(-2, -1)))
            err, cancel = formula_vs_fd(z[pairs[:, 0]], z[others], pos, beta)
            rel_err.append(err)
            rel_err_half.append(formula_vs_fd(z[pairs[:, 0]], z[others], pos, beta, 0.5)[0])
            n_cancel += int(cancel.sum())
            fit_ok.append(not cancel.any())
        full, anchor, rel_err = np.array(full), np.array(anchor), np.array(rel_err)
        # The sign matters: at a non-optimal anchor the β-linear term is −β(s_ik* − s_ij)·I.
        eig_full = np.linalg.eigvalsh(0.5 * (h_full + h_full.T))  # at the largest β
        bracket = u0(z, pairs)  # max_{k≠i} s_ik − s_ij = s_ik* − s_ij ≥ 0
        margin = -sphere_brackets(z, pairs)[0]
        non_opt = bracket > 0
        top = anchor[-1]
        out.append({
            "name": cfg.name,
            "betas": betas.tolist(),
            "u0": float(bracket.mean()),
            "norm_full": full.tolist(),
            "norm_anchor": anchor.tolist(),
            "slope_full": est.log_log_slope(betas, full),
            "slope_full_top": est.log_log_slope(betas[-2:], full[-2:]),
            # β where the D.6 terms cancel exactly (‖H‖ = 0, the trap at β = 1) are left out.
            "slope_anchor_max": est.log_log_slope(betas[fit_ok], anchor.max(1)[fit_ok]),
            "slope_anchor_max_top": est.log_log_slope(betas[-2:], anchor.max(1)[-2:]),
            "fd_rel_err_max": float(rel_err.max()),
            "fd_rel_err_max_half": float(np.max(rel_err_half)),
            "fd_cancelled_blocks": n_cancel,
            "eig_full_at_max_beta": [float(eig_full[0]), float(eig_full[-1])],
            "eig_anchor_at_max_beta": [float(e) for e in np.linalg.eigvalsh(h_formula)[:, [0, -1]]
                                       .ravel()],
            "anchor_coeff_at_max_beta": (top / betas[-1]).tolist(),
            "anchor_gap": bracket.tolist(),
            "anchor_non_optimal": non_opt.tolist(),
            "decay_rate_full_top": float(-np.diff(np.log(full[-2:]))[0] / np.diff(betas[-2:])[0]),
            "min_margin": float(margin.min()),
            "top2_margin": top2_margin(z, pairs),
        })
    return out


def top2_margin(z: np.ndarray, pairs: np.ndarray) -> float:
    """The smallest gap, over anchors, between the two most similar candidates: the softmax has
    concentrated on one candidate once β·margin ≫ 1 (0 at a tie such as the S1 trap)."""
    others, _ = _anchor_candidates(z.shape[0], pairs)
    s = np.sort(np.einsum("pkd,pd->pk", z[others], z[pairs[:, 0]]), axis=-1)
    return float((s[:, -1] - s[:, -2]).min())


def covariance_slope(cfg: SphereConfig, beta1: float) -> float:
    """log₂ of max_i ‖Cov_{k∼p_i}[∇s_ik]‖₂ at 2β₁ over β₁: the log–log slope that App. C.3's
    proof says is −1 (the covariance "decays as O(1/β)"). It is 0 where an anchor's best
    candidates tie (the softmax never concentrates) and ≈ −β₁·margin/ln 2 where one candidate
    leads by the margin (the covariance decays like e^{−β·margin})."""
    others, pos = _anchor_candidates(cfg.z.shape[0], cfg.pairs)
    norms = []
    for beta in (beta1, 2.0 * beta1):
        cov, _ = hessian_terms(cfg.z[cfg.pairs[:, 0]], cfg.z[others], pos, beta)
        norms.append(float(np.linalg.norm(cov / beta**2, 2, axis=(-2, -1)).max()))
    return float(np.log2(norms[1] / norms[0]))


def asymptotic_scaling(
    cfg: SphereConfig, beta_min: float, margin_factor: float, beta_cap: float
) -> dict | None:
    """‖H‖₂ of L (finite differences) at β₁ and 2β₁, β₁ = max(β_min, margin_factor/margin), and
    the App. C.3 per-anchor blocks at β₁ against β₁·|s_ik* − s_ij| (our analysis); None when
    β₁ would exceed ``beta_cap`` (a near-tie: not asymptotic within reach).

    Where an anchor's two best candidates nearly tie, the β²·Cov term decays like β²e^{−β·margin}
    and dominates ‖H‖ until β·margin is large, so a slope taken at a fixed β can be anything
    (even negative) in between; at β₁ the softmax has concentrated to e^{−margin_factor}."""
    m = top2_margin(cfg.z, cfg.pairs)
    beta1 = max(beta_min, margin_factor / m) if m > 0 else np.inf
    if beta1 > beta_cap:
        return None
    norms = [float(np.linalg.norm(config_fd_hessian(cfg.z, cfg.pairs, b), 2))
             for b in (beta1, 2.0 * beta1)]
    blocks = np.linalg.norm(config_anchor_hessians(cfg.z, cfg.pairs, beta1), 2, axis=(-2, -1))
    gap = u0(cfg.z, cfg.pairs)
    non_opt = gap > 0
    return {"beta1": float(beta1), "margin": m, "slope": float(np.log2(norms[1] / norms[0])),
            "coeff_ratio": (blocks[non_opt] / beta1 / gap[non_opt]).tolist(),
            "cov_slope": covariance_slope(cfg, beta1)}


def run_hessian(
    *,
    n_random: int,
    betas: Sequence[float],
    seed: int,
    margin_factor: float,
    beta_cap: float,
) -> dict:
    """Our test of the Hessian lemma (annealing paper §5): (i) the S1 trap, (ii) random non-optimal
    (S²)^6, (iii) minimizers; with the finite-difference step halved as a check of the FD reference
    and the random configurations' asymptotic slopes (:func:`asymptotic_scaling`)."""
    rng = np.random.default_rng(seed)
    special = [s1_trap(), s1_trap_perturbed(), s1_minimizer(), random_minimizer(rng=rng)]
    randoms = random_configs(n_random, rng=rng)
    res_special = hessian_scaling(special, betas)
    res_random = hessian_scaling(randoms, betas)
    slopes = np.array([r["slope_full"] for r in res_random])
    slopes_top = np.array([r["slope_full_top"] for r in res_random])
    # Per-anchor coefficient ‖H_i‖/β at the largest β vs |s_ik* − s_ij| over non-optimal anchors.
    coeff = np.concatenate([np.array(r["anchor_coeff_at_max_beta"])[r["anchor_non_optimal"]]
                            for r in res_random])
    gap = np.concatenate([np.array(r["anchor_gap"])[r["anchor_non_optimal"]] for r in res_random])
    ratio = coeff / gap
    near_one = float(np.mean(np.abs(slopes_top - 1) < 0.1))
    asym = [asymptotic_scaling(c, float(max(betas)), margin_factor, beta_cap) for c in randoms]
    kept = [a for a in asym if a is not None]
    a_slopes = np.array([a["slope"] for a in kept])
    a_ratio = np.concatenate([a["coeff_ratio"] for a in kept]) if kept else np.empty(0)
    perturbed = next(r for r in res_special if r["name"] == "s1_trap_perturbed")
    pert = asymptotic_scaling(special[1], float(max(betas)), margin_factor, beta_cap)
    all_res = res_special + res_random
    return {
        "configs": res_special,
        "random": {
            "count": len(randoms),
            "slope_full": _summary(slopes),
            "slope_full_top": _summary(slopes_top),
            "slope_full_top_within_0.1_of_1": near_one,
            "coeff_over_gap": _summary(ratio),
            "coeff_over_gap_within_1pct": float(np.mean(np.abs(ratio - 1) < 0.01)),
            "fd_rel_err_max": float(max(r["fd_rel_err_max"] for r in res_random)),
            "per_config": [{k: r[k] for k in ("slope_full", "slope_full_top", "u0",
                                              "top2_margin")} for r in res_random],
        },
        "asymptotic": {
            "margin_factor": margin_factor, "beta_cap": beta_cap,
            "count": len(kept), "excluded": len(asym) - len(kept),
            "slopes": a_slopes.tolist(),
            "slope_min": float(a_slopes.min()) if kept else None,
            "slope_max": float(a_slopes.max()) if kept else None,
            "beta1_max": float(max(a["beta1"] for a in kept)) if kept else None,
            "coeff_ratio_min": float(a_ratio.min()) if a_ratio.size else None,
            "coeff_ratio_max": float(a_ratio.max()) if a_ratio.size else None,
            "anchors": int(a_ratio.size),
            "perturbed_trap": pert,
            "perturbed_trap_slope_top": perturbed["slope_full_top"],
        },
        # App. C.3's step "Cov decays as O(1/β)", at the same β₁ and 2β₁ (the trap: at the
        # largest β, where the tie keeps the softmax split whatever β)
        "covariance": {
            "s1_trap": covariance_slope(special[0], float(max(betas))),
            "random_min": float(min(a["cov_slope"] for a in kept)) if kept else None,
            "random_max": float(max(a["cov_slope"] for a in kept)) if kept else None,
            "count": len(kept),
        },
        "fd": {
            "rel_err_max": {"step": float(max(r["fd_rel_err_max"] for r in all_res)),
                            "half_step": float(max(r["fd_rel_err_max_half"] for r in all_res))},
            "step": "0.02/max(1, β·max|s|), Richardson-extrapolated central differences",
            "configs": len(all_res), "betas": [float(b) for b in betas],
        },
    }


def _summary(x: np.ndarray) -> dict[str, float]:
    q = np.quantile(x, [0.05, 0.25, 0.5, 0.75, 0.95])
    return {"mean": float(x.mean()), "q05": float(q[0]), "q25": float(q[1]),
            "median": float(q[2]), "q75": float(q[3]), "q95": float(q[4])}
