"""InfoNCE energy landscapes for particles on unit spheres (annealing paper §2; our S1).

A configuration is an array ``z`` of shape ``(..., particles, dim)`` of unit vectors; every leading
axis is a batch of independent configurations (chains, grid points). ``pairs`` is an integer array
of shape ``(n_pairs, 2)`` of ordered positive pairs (anchor i, positive j). The similarity is
``s_ik = κ_s · z_iᵀ z_k``; κ_s scales every barrier linearly, which is why the simulator exposes it.

- :func:`infonce_loss`  L(Z, β) = mean_(i,j) −log[exp(β s_ij) / Σ_{k≠i} exp(β s_ik)]
  (the positive is in the denominator, the anchor itself is not);
- :func:`infonce_grad`  its Euclidean (ambient) gradient with respect to Z, in closed form;
- :func:`u0`            U_0(Z) = mean_(i,j) [max_{k≠i} s_ik − s_ij], the β → ∞ limit of L/β.

The S1 setting (4 particles on S¹, pairs {(0,1),(1,0),(2,3),(3,2)}) is evaluated on the
rotation-quotiented 3-torus by :func:`s1_torus_landscape`: the loss is invariant under a common
rotation, so particle 0 is pinned at angle 0 and the three remaining angles are gridded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

#: Positive pairs of S1 in 0-based particle order: (0,1) and (2,3), each in both directions.
S1_PAIRS: NDArray[np.int64] = np.array([[0, 1], [1, 0], [2, 3], [3, 2]], dtype=np.int64)
#: The interleaved trap (our S1): pair (0,1) at 0°/180°, pair (2,3) at 90°/270°.
S1_TRAP_ANGLES: FloatArray = np.deg2rad(np.array([0.0, 180.0, 90.0, 270.0]))


def _check_pairs(pairs: ArrayLike, n_particles: int) -> NDArray[np.int64]:
    p = np.asarray(pairs, dtype=np.int64)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] == 0:
        raise ValueError(f"pairs must have shape (n_pairs, 2), got {p.shape}")
    if p.min() < 0 or p.max() >= n_particles:
        raise ValueError(f"pair index out of range for {n_particles} particles")
    if np.any(p[:, 0] == p[:, 1]):
        raise ValueError("a particle cannot be its own positive (the anchor is not a candidate)")
    return p


def _anchor_rows(z: ArrayLike, pairs: ArrayLike, kappa_s: float
                 ) -> tuple[FloatArray, NDArray[np.int64], FloatArray, FloatArray]:
    zz = np.asarray(z, dtype=np.float64)
    p = _check_pairs(pairs, zz.shape[-2])
    # κ_s·Z Zᵀ with the anchor's own column at −∞, so that it drops out of max and softmax
    s = kappa_s * np.matmul(zz, np.swapaxes(zz, -1, -2))
    n = zz.shape[-2]
    s[..., np.arange(n), np.arange(n)] = -np.inf
    rows = s[..., p[:, 0], :]  # (..., n_pairs, particles): candidates of each pair's anchor
    pos = rows[..., np.arange(p.shape[0]), p[:, 1]]  # (..., n_pairs)
    return zz, p, rows, pos


def infonce_loss(z: ArrayLike, pairs: ArrayLike, beta: float, kappa_s: float = 1.0) -> FloatArray:
    """L(Z, β), one value per configuration (shape ``z.shape[:-2]``)."""
    _, _, rows, pos = _anchor_rows(z, pairs, kappa_s)
    # Shift by the row max before exponentiating: β·s reaches β·κ_s, far past exp's range at β ~ 10³.
    m = rows.max(axis=-1)
    lse = beta * m + np.log(np.exp(beta * (rows - m[..., None])).sum(axis=-1))
    return (lse - beta * pos).mean(axis=-1)


def infonce_grad(z: ArrayLike, pairs: ArrayLike, beta: float, kappa_s: float = 1.0) -> FloatArray:
    """Euclidean gradient ∂L/∂Z (shape of ``z``), closed form.

    For pair a = (i, j) with softmax row p_a over k ≠ i, let G_a = p_a − e_j. The pair's term moves
    the anchor by βκ_s Σ_k G_ak z_k and every candidate k by βκ_s G_ak z_i. Scattering the rows G_a
    into their anchors' rows gives M (particles × particles) and ∂L/∂Z = βκ_s/|P| · (M + Mᵀ) Z.
    Project onto the tangent space (I − z zᵀ) for the Riemannian gradient.
    """
    zz, p, rows, _ = _anchor_rows(z, pairs, kappa_s)
    n = zz.shape[-2]
    m = rows.max(axis=-1, keepdims=True)
    w = np.exp(beta * (rows - m))  # exp(−∞) = 0 removes the anchor itself
    g = w / w.sum(axis=-1, keepdims=True)
    g[..., np.arange(p.shape[0]), p[:, 1]] -= 1.0
    anchor_onehot = np.zeros((p.shape[0], n))
    anchor_onehot[np.arange(p.shape[0]), p[:, 0]] = 1.0
    mat = np.einsum("ai,...ak->...ik", anchor_onehot, g)  # anchors may repeat: sum their rows
    sym = mat + np.swapaxes(mat, -1, -2)
    return (beta * kappa_s / p.shape[0]) * np.matmul(sym, zz)


def u0(z: ArrayLike, pairs: ArrayLike, kappa_s: float = 1.0) -> FloatArray:
    """U_0(Z): exactly 0 where every positive is (weakly) its anchor's most similar candidate."""
    _, _, rows, pos = _anchor_rows(z, pairs, kappa_s)
    return (rows.max(axis=-1) - pos).mean(axis=-1)


def free_energy(
    z: ArrayLike, pairs: ArrayLike, beta_bar: float, kappa_s: float = 1.0
) -> FloatArray:
    """F_β̄ = L(·, β̄)/β̄, the finite-β̄ smoothing of U_0 (F_β̄ → U_0 uniformly as β̄ → ∞)."""
    return infonce_loss(z, pairs, beta_bar, kappa_s) / beta_bar


def free_energy_grad_fn(
    pairs: ArrayLike, beta_bar: float, kappa_s: float = 1.0
) -> Callable[[FloatArray], FloatArray]:
    """z ↦ ∂F_β̄/∂Z, the drift of the normalised dynamics (P2, ours) and of the quench."""
    p = np.asarray(pairs, dtype=np.int64)

    def grad(z: FloatArray) -> FloatArray:
        return infonce_grad(z, p, beta_bar, kappa_s) / beta_bar

    return grad


def s1_angles_to_z(angles: ArrayLike) -> FloatArray:
    """Angles of shape (..., particles) → unit vectors on S¹ of shape (..., particles, 2)."""
    a = np.asarray(angles, dtype=np.float64)
    return np.stack([np.cos(a), np.sin(a)], axis=-1)


@dataclass(frozen=True)
class TorusLandscape:
    """F_β̄ and U_0 on the n³ grid of (θ1, θ2, θ3) with θ0 = 0; axis a holds θ_{a+1}."""

    angles: FloatArray  # (n,) grid angles in [0, 2π), shared by the three axes
    free_energy: FloatArray  # (n, n, n)
    u0: FloatArray  # (n, n, n)
    beta_bar: float
    kappa_s: float


def _s1_f_u0(
    t1: FloatArray, t2: FloatArray, t3: FloatArray, beta_bar: float, kappa_s: float
) -> tuple[FloatArray, FloatArray]:
    """F_β̄ and U_0 of S1 with θ0 = 0 from broadcastable angle arrays.

    Same quantities as :func:`free_energy` and :func:`u0` with ``S1_PAIRS``, written per anchor
    from the six pair cosines so that the grid never materialises (points, 4, 4) Gram matrices.
    The pairwise cosines only depend on two of the angles, so they are built on the 2-D faces and
    broadcast, which makes the 3-D grid about ten times cheaper than the generic path.
    """
    c01, c02, c03 = np.cos(t1), np.cos(t2), np.cos(t3)
    c12, c13, c23 = np.cos(t1 - t2), np.cos(t1 - t3), np.cos(t2 - t3)
    # (positive, negative, negative) for anchors 0, 1, 2, 3.
    anchors = ((c01, c02, c03), (c01, c12, c13), (c23, c02, c12), (c23, c03, c13))
    f_sum: FloatArray | float = 0.0
    u_sum: FloatArray | float = 0.0
    for pos, n1, n2 in anchors:  # four anchors, not grid points
        d1, d2 = kappa_s * (n1 - pos), kappa_s * (n2 - pos)
        bracket = np.maximum(0.0, np.maximum(d1, d2))  # U_0 term: max_{k≠i} s_ik − s_ij
        # ℓ_ij/β̄ = bracket + log Σ_k exp(β̄(s_ik − s_ij) − β̄·bracket)/β̄; every exponent is ≤ 0.
        shifted = np.exp(-beta_bar * bracket)
        shifted += np.exp(beta_bar * (d1 - bracket))
        shifted += np.exp(beta_bar * (d2 - bracket))
        f_sum = f_sum + bracket + np.log(shifted) / beta_bar
        u_sum = u_sum + bracket
    return np.asarray(f_sum) / 4.0, np.asarray(u_sum) / 4.0


def s1_torus_landscape(
    n: int = 128, beta_bar: float = 20.0, kappa_s: float = 1.0, slab_rows: int = 16
) -> TorusLandscape:
    """Evaluate F_β̄ and U_0 of S1 on the rotation-quotiented 3-torus, n points per angle.

    n divisible by 4 puts the trap (180°, 90°, 270°) on a grid point. The grid is filled in slabs
    of ``slab_rows`` values of θ1 to bound the temporaries; 256³ is 16.7M points.
    """
    if n < 4:
        raise ValueError("n must be at least 4")
    theta = 2.0 * np.pi * np.arange(n) / n
    f = np.empty((n, n, n))
    u = np.empty((n, n, n))
    t2, t3 = theta[None, :, None], theta[None, None, :]
    for start in range(0, n, slab_rows):  # slabs bound memory; each slab is fully vectorised
        t1 = theta[start : start + slab_rows, None, None]
        f[start : start + t1.shape[0]], u[start : start + t1.shape[0]] = _s1_f_u0(
            t1, t2, t3, beta_bar, kappa_s
        )
    return TorusLandscape(angles=theta, free_energy=f, u0=u, beta_bar=beta_bar, kappa_s=kappa_s)
