"""InfoNCE on products of circles (S¹)^N in angle coordinates (annealing paper §2.1; our S1).

A configuration is an array ``theta`` of shape ``(..., N)`` of angles; every leading axis is a
batch of independent configurations (chains). Particle i sits at z_i = (cos θ_i, sin θ_i) and the
similarity is s_ik = κ_s·cos(θ_i − θ_k), so everything is a function of the N(N−1)/2 pairwise
angle differences. This is the same loss as :mod:`infonce_lab.simulation.landscape` (which works
on unit vectors and any dimension), specialised to S¹, where it is cheaper by a large factor:

- the state has N numbers per chain instead of 2N, and the exponential map of (S¹)^N is angle
  addition, so a Langevin step needs no renormalisation (:func:`infonce_lab.simulation.langevin.
  clocked_langevin` with ``space="angles"``);
- the gradient only needs the cosines and sines of the pair differences: with G_a = p_a − e_j
  the softmax row of pair a = (i, j) minus the positive's indicator, the pair's term is
  (βκ_s/|P|)·Σ_k G_ak·cos(θ_i − θ_k), so every unordered pair q = (u, v) collects the weight
  W_q of its two directions and ∂L/∂θ_u = −(βκ_s/|P|)·W_q·sin(θ_u − θ_v) = −∂L/∂θ_v.

:func:`quench` labels configurations by the basin they descend into along −∇F_β̄ (F_β̄ = L/β̄),
as :func:`infonce_lab.simulation.barriers.quench` does on unit vectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class CircleInfoNCE:
    """The InfoNCE loss of ``n`` particles on S¹ with ordered positive pairs ``pairs`` (P, 2).

    Every anchor's candidates are all other particles (the positive among them, the anchor not), as
    in the annealing paper's §1–2.1. Index tables are built once; the methods are vectorised over
    leading axes.
    """

    n: int
    pairs: NDArray[np.int64]
    kappa: float = 1.0
    _u: NDArray[np.int64] = field(init=False, repr=False)
    _v: NDArray[np.int64] = field(init=False, repr=False)
    _cand_q: NDArray[np.int64] = field(init=False, repr=False)
    _pos: NDArray[np.int64] = field(init=False, repr=False)
    _scatter: FloatArray = field(init=False, repr=False)
    _incidence: FloatArray = field(init=False, repr=False)
    _anchor_of: FloatArray = field(init=False, repr=False)
    _n_pos: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        p = np.asarray(self.pairs, dtype=np.int64)
        if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] == 0:
            raise ValueError(f"pairs must have shape (n_pairs, 2), got {p.shape}")
        if p.min() < 0 or p.max() >= self.n or np.any(p[:, 0] == p[:, 1]):
            raise ValueError("pairs must index distinct particles in [0, n)")
        u, v = np.triu_indices(self.n, k=1)
        q_of = np.full((self.n, self.n), -1, dtype=np.int64)
        q_of[u, v] = np.arange(u.size)
        q_of[v, u] = np.arange(u.size)
        m = np.arange(self.n - 1)
        cand = m[None, :] + (m[None, :] >= p[:, :1])  # k ≠ i, in particle order
        cand_q = q_of[p[:, :1], cand]  # (P, n−1): the unordered pair (i, k)
        pos = np.argmax(cand == p[:, 1:], axis=1)
        scatter = np.zeros((cand_q.size, u.size))
        scatter[np.arange(cand_q.size), cand_q.ravel()] = 1.0
        incidence = np.zeros((u.size, self.n))
        incidence[np.arange(u.size), u] = 1.0
        incidence[np.arange(u.size), v] = -1.0
        # anchor_of[q, a] = 1 when the unordered pair q joins anchor a to one of its candidates;
        # n_pos[q] counts the anchors whose positive pair is q.
        anchor_of = np.zeros((u.size, p.shape[0]))
        anchor_of[cand_q.T, np.arange(p.shape[0])[None, :]] = 1.0
        n_pos = np.bincount(q_of[p[:, 0], p[:, 1]], minlength=u.size).astype(np.float64)
        for name, val in (("pairs", p), ("_u", u), ("_v", v), ("_cand_q", cand_q), ("_pos", pos),
                          ("_scatter", scatter), ("_incidence", incidence),
                          ("_anchor_of", anchor_of), ("_n_pos", n_pos)):
            object.__setattr__(self, name, val)

    @property
    def n_pairs(self) -> int:
        return int(self.pairs.shape[0])

    # -------------------------------------------------------------------------- pieces
    def _diffs(self, theta: ArrayLike) -> FloatArray:
        t = np.asarray(theta, dtype=np.float64)
        if t.shape[-1] != self.n:
            raise ValueError(f"theta must have {self.n} angles on its last axis, got {t.shape}")
        return t[..., self._u] - t[..., self._v]

    def _rows(self, cos: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Similarities of every anchor's candidates (..., P, n−1) and of its positive (..., P)."""
        rows = self.kappa * cos[..., self._cand_q]
        pos = np.take_along_axis(rows, np.broadcast_to(self._pos[:, None], rows.shape[:-1] + (1,)),
                                 axis=-1)[..., 0]
        return rows, pos

    @staticmethod
    def _beta(beta: float | ArrayLike) -> FloatArray:
        """β with two trailing axes, to multiply (..., P, n−1) logits."""
        b = np.asarray(beta, dtype=np.float64)
        return b.reshape(b.shape + (1, 1))

    # -------------------------------------------------------------------------- public
    def loss(self, theta: ArrayLike, beta: float | ArrayLike) -> FloatArray:
        """L(θ, β) per configuration; β broadcasts against the batch shape ``theta.shape[:-1]``."""
        rows, pos = self._rows(np.cos(self._diffs(theta)))
        b = self._beta(beta)
        x = b * rows
        m = x.max(axis=-1)
        lse = m + np.log(np.exp(x - m[..., None]).sum(axis=-1))
        return (lse - b[..., 0] * pos).mean(axis=-1)

    def u0(self, theta: ArrayLike) -> FloatArray:
        """U_0(θ) = mean over pairs of max_{k≠i} s_ik − s_ij (≥ 0; 0 exactly on the global set)."""
        rows, pos = self._rows(np.cos(self._diffs(theta)))
        return (rows.max(axis=-1) - pos).mean(axis=-1)

    def brackets(self, theta: ArrayLike) -> FloatArray:
        """Per pair: max over the *negatives* of s_ik − s_ij (..., P): < 0 iff the positive is the
        anchor's unique most similar candidate (then its U_0 bracket is 0)."""
        rows, pos = self._rows(np.cos(self._diffs(theta)))
        neg = rows.copy()
        np.put_along_axis(neg, np.broadcast_to(self._pos[:, None], rows.shape[:-1] + (1,)),
                          -np.inf, axis=-1)
        return neg.max(axis=-1) - pos

    def positive_sims(self, theta: ArrayLike) -> FloatArray:
        """s_ij of every positive pair (..., P)."""
        return self._rows(np.cos(self._diffs(theta)))[1]

    def grad(self, theta: ArrayLike, beta: float | ArrayLike) -> FloatArray:
        """∂L/∂θ (shape of ``theta``), closed form; β broadcasts against ``theta.shape[:-1]``."""
        t = np.asarray(theta, dtype=np.float64)
        if t.shape[-1] != self.n:
            raise ValueError(f"theta must have {self.n} angles on its last axis, got {t.shape}")
        b = np.asarray(beta, dtype=np.float64)
        cm = np.ascontiguousarray(np.moveaxis(t, -1, 0))
        return np.moveaxis(self.grad_cm(cm, np.broadcast_to(b, t.shape[:-1])), 0, -1)

    def grad_cm(self, theta: FloatArray, beta: float | FloatArray, *,
                fast_trig: bool = False) -> FloatArray:
        """∂L/∂θ in the particle-major layout: ``theta`` (N, ...), β broadcasting against
        ``theta[0]``; returns (N, ...). This is the Langevin integrator's call.

        Pair-major arrays make every gather a copy of whole rows. Each pair's weight
        E_q = exp(βκ_s(cos_q − 1)) is computed once for both of its directions (the softmax
        shift by the largest possible similarity κ_s needs no per-row maximum, and keeps every
        exponent ≥ −2βκ_s, far from underflow while βκ_s < 350; above that the per-row maximum
        is used). Then Z_a = Σ_{q ∋ i_a} E_q, W_q = E_q·Σ_{a: q ∋ i_a} 1/Z_a − n_pos(q).

        ``fast_trig``: cosines and sines of the angles in float32 (relative error ~6e-8),
        everything else in float64. numpy vectorises float32 trigonometry only, which makes
        the gradient cheaper; the drift error (~1e-7·βκ_s) is orders of magnitude below one
        step's noise √(2dt/β) and below the discretisation error that the half-step run
        measures. Off (exact float64) for the quench, which converges to a gradient of 1e-7.
        """
        b = np.asarray(beta, dtype=np.float64)
        if float(np.max(b)) * self.kappa >= 350.0:
            out = self._grad_rowmax(np.moveaxis(theta, 0, -1), b)
            return np.ascontiguousarray(np.moveaxis(out, -1, 0))
        if fast_trig:
            t32 = theta.astype(np.float32)
            c, s = np.cos(t32).astype(np.float64), np.sin(t32).astype(np.float64)
        else:
            c, s = np.cos(theta), np.sin(theta)
        cu, cv, su, sv = c[self._u], c[self._v], s[self._u], s[self._v]
        cos = cu * cv
        cos += su * sv
        sin = su * cv
        sin -= cu * sv
        bk = b * self.kappa
        cos -= 1.0
        cos *= bk
        e = np.exp(cos).reshape(cos.shape[0], -1)  # E_q; (Q, M) for 2-D products
        inv_z = self._anchor_of.T @ e  # Z_a, (P, M)
        np.reciprocal(inv_z, out=inv_z)
        w = self._anchor_of @ inv_z  # Σ_{a: q ∋ i_a} 1/Z_a, (Q, M)
        w *= e
        w -= self._n_pos[:, None]
        w *= sin.reshape(w.shape)
        w *= np.broadcast_to(-bk / self.n_pairs, theta.shape[1:]).reshape(-1)
        return (self._incidence.T @ w).reshape(theta.shape)

    def _grad_rowmax(self, theta: FloatArray, beta: FloatArray) -> FloatArray:
        """The gradient with the softmax shifted by each anchor's own maximum (any β)."""
        d = self._diffs(theta)
        rows, _ = self._rows(np.cos(d))
        b = self._beta(beta)
        x = b * rows
        x = x - x.max(axis=-1, keepdims=True)
        w = np.exp(x)
        w /= w.sum(axis=-1, keepdims=True)
        w[..., np.arange(self.n_pairs), self._pos] -= 1.0  # G_a = p_a − e_j
        weight = w.reshape(w.shape[:-2] + (-1,)) @ self._scatter  # (..., Q): W_q
        coef = (-(self.kappa / self.n_pairs) * b[..., 0]) * weight * np.sin(d)
        return coef @ self._incidence

    def free_energy_grad(self, theta: ArrayLike, beta_bar: float) -> FloatArray:
        """∂F_β̄/∂θ with F_β̄ = L(·, β̄)/β̄: the drift of the normalised dynamics and of the quench."""
        return self.grad(theta, beta_bar) / beta_bar

    def hessian_fd(self, theta: ArrayLike, beta: float, h: float = 1e-5) -> FloatArray:
        """Central-difference Hessian of L in angle coordinates (..., N, N), from the gradient."""
        t = np.asarray(theta, dtype=np.float64)
        cols = []
        for i in range(self.n):  # over the N coordinates, each stencil vectorised over the batch
            e = np.zeros(self.n)
            e[i] = h
            cols.append((self.grad(t + e, beta) - self.grad(t - e, beta)) / (2 * h))
        hess = np.stack(cols, axis=-1)
        return 0.5 * (hess + np.swapaxes(hess, -1, -2))


def circle_pairs(n_pairs: int) -> NDArray[np.int64]:
    """Ordered positive pairs (2p, 2p+1) and (2p+1, 2p) for p < n_pairs (S1 for n_pairs = 2)."""
    return np.array([pair for p in range(n_pairs) for pair in ((2 * p, 2 * p + 1),
                                                              (2 * p + 1, 2 * p))], dtype=np.int64)


def s1_model(kappa: float = 1.0) -> CircleInfoNCE:
    """Our S1: 4 particles, pairs (0,1), (1,0), (2,3), (3,2)."""
    return CircleInfoNCE(4, circle_pairs(2), kappa)


def interleaved_trap(n_pairs: int) -> FloatArray:
    """The interleaved trap generalised to n pairs: pair p antipodal at p·π/n and p·π/n + π, so
    every anchor's positive is its least similar candidate and its two nearest candidates (at
    ±π/n) are negatives that tie. For n = 2 this is our S1 trap (0°, 180°, 90°, 270°)."""
    base = np.arange(n_pairs) * np.pi / n_pairs
    return np.stack([base, base + np.pi], axis=1).ravel()


@dataclass(frozen=True)
class AngleQuench:
    theta: FloatArray  # (..., N) final angles
    u0: FloatArray  # (...,)
    is_global: NDArray[np.bool_]  # U_0 < global_tol
    converged: NDArray[np.bool_]
    steps: int


def quench(
    model: CircleInfoNCE,
    theta: ArrayLike,
    beta_bar: float,
    *,
    step: float = 1e-2,
    max_steps: int = 20_000,
    tol: float = 1e-7,
    global_tol: float = 1e-6,
    stop_at_global: bool = True,
) -> AngleQuench:
    """Gradient descent on F_β̄ from every configuration at once, finished ones dropped.

    The same procedure as :func:`infonce_lab.simulation.barriers.quench` (whose docstring gives
    the step bound and why stopping at U_0 < ``global_tol`` is safe), in angle coordinates, where
    the exponential map is exact."""
    t0 = np.asarray(theta, dtype=np.float64)
    batch = t0.shape[:-1]
    cur = t0.reshape(-1, model.n).copy()
    active = np.arange(cur.shape[0])
    converged = np.zeros(cur.shape[0], dtype=bool)
    it = 0
    while active.size and it < max_steps:
        ta = cur[active]
        g = model.free_energy_grad(ta, beta_bar)
        done = np.abs(g).max(axis=-1) < tol
        if stop_at_global:
            done |= model.u0(ta) < global_tol
        converged[active[done]] = True
        keep = ~done
        active = active[keep]
        cur[active] = ta[keep] - step * g[keep]
        it += 1
    u = model.u0(cur)
    return AngleQuench(cur.reshape(t0.shape), u.reshape(batch), (u < global_tol).reshape(batch),
                       converged.reshape(batch), it)
