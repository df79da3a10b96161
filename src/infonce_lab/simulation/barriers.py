"""Energy barriers on periodic grids and basin membership by quenching (annealing paper §2.2, A5;
our S1).

:func:`barrier_height` floods a potential sampled on a periodic n-dimensional grid (a torus) and
returns its local minima, the level at which each basin merges into a basin with a lower minimum
(the disconnectivity graph, "elder rule") and ΔE_max = max over non-global minima of
(merge saddle − minimum), the escape cost whose inverse is the Hajek constant c* = 1/ΔE_max.

Algorithm (exact on the grid graph, vectorised apart from a loop over basin-graph edges):

1. Points are totally ordered by (value, flat index) through their rank, so plateaus and ties need
   no special cases: every comparison below is strict.
2. Each point points to its lowest-ranked neighbour (or itself when it is a local minimum);
   pointer jumping follows these steepest-descent chains to a minimum in O(log length) passes,
   which labels every grid point with its basin.
3. Adjacent points with different labels give basin-graph edges of weight max(rank_p, rank_q);
   each pair of basins keeps its lowest edge (the pass between them).
4. Kruskal's union-find over those passes, with the elder rule (the component with the higher
   minimum dies), yields the merge level of every minimum. Only a minimum spanning tree of the basin
   graph is needed, so the Python loop runs over at most (#minima − 1) edges, never over grid points.

Why contracting steepest-descent basins is exact: every point of a basin is joined to its minimum by
a descending path, so any basin-graph path of passes w_1..w_k lifts to a grid path whose maximum is
max w_i, and any grid path crosses basins through edges no higher than its own maximum. The minimax
("lowest saddle") level between two minima is therefore the same in both graphs.

Connectivity: ``"face"`` uses the 2·d axis neighbours (±1 along one axis); ``"full"`` uses all
3^d − 1 neighbours (faces, edges and corners). Both wrap around every axis. On a grid, face
connectivity over-estimates saddles crossed by paths oblique to the axes by O(h·|∇V|); full
connectivity reduces that bias; both converge as the grid is refined. Kinked potentials such as
U_0 are the bad case: their valleys are creases, and a crease oblique to every neighbour direction
is followed only by stepping off it, at O(h) cost, which also leaves shallow spurious grid minima
along it (their barriers vanish with h; the reported trap barrier is unaffected).

:func:`s1_barrier` applies the flooding to F_β̄ and U_0 of S1 on the rotation-quotiented 3-torus;
:func:`quench` labels configurations by basin through gradient descent.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree

from infonce_lab.simulation.landscape import (
    S1_TRAP_ANGLES,
    s1_torus_landscape,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class BarrierResult:
    """Minima are sorted by value (ties by flat index); index 0 is the global minimum.

    ``saddle_value[m]`` is the level at which basin m first joins a basin with a lower minimum
    (+inf for the global minimum) and ``merges_into[m]`` that basin's minimum (−1 for the global
    one); together they are the disconnectivity graph. ``saddle_index`` is the grid point where the
    join happens. ``labels`` gives every grid point's steepest-descent basin.
    """

    minima_index: IntArray  # (m, ndim) grid indices
    minima_value: FloatArray  # (m,)
    saddle_index: IntArray  # (m, ndim); −1 row for the global minimum
    saddle_value: FloatArray  # (m,)
    merges_into: IntArray  # (m,)
    delta_e_max: float
    global_tol: float
    connectivity: str
    labels: IntArray

    @property
    def barriers(self) -> FloatArray:
        """saddle − minimum per minimum (+inf for the global minimum)."""
        return self.saddle_value - self.minima_value

    @property
    def is_global(self) -> NDArray[np.bool_]:
        return self.minima_value <= self.minima_value[0] + self.global_tol

    def basin_of(self, index: tuple[int, ...]) -> int:
        return int(self.labels[index])


def neighbour_offsets(ndim: int, connectivity: str = "face") -> IntArray:
    """All neighbour offsets (rows), ± pairs included."""
    if connectivity == "face":
        eye = np.eye(ndim, dtype=np.int64)
        return np.concatenate([eye, -eye])
    if connectivity == "full":
        offs = np.array(list(itertools.product((-1, 0, 1), repeat=ndim)), dtype=np.int64)
        return offs[np.any(offs != 0, axis=1)]
    raise ValueError(f"connectivity must be 'face' or 'full', got {connectivity!r}")


def _half_offsets(offsets: IntArray) -> IntArray:
    # One of each ± pair: an undirected edge needs to be seen once.
    first_nonzero = offsets[np.arange(len(offsets)), np.argmax(offsets != 0, axis=1)]
    return offsets[first_nonzero > 0]


def _shifted(a: NDArray, off: IntArray) -> NDArray:
    """out[x] = a[x + off] with wrap-around on every axis."""
    return np.roll(a, shift=tuple(int(-o) for o in off), axis=tuple(range(a.ndim)))


def _kruskal_elder(
    a: IntArray, b: IntArray, w: IntArray, n_minima: int
) -> tuple[IntArray, IntArray]:
    """Merge rank and elder partner per minimum, from basin-graph edges (a, b, w = rank of pass)."""
    death = np.full(n_minima, -1, dtype=np.int64)
    into = np.full(n_minima, -1, dtype=np.int64)
    if n_minima == 1 or a.size == 0:
        return death, into
    # scipy drops explicit zeros, so shift the ranks to ≥ 1; float64 holds ranks < 2^53 exactly.
    graph = coo_matrix((w.astype(np.float64) + 1.0, (a, b)), shape=(n_minima, n_minima)).tocsr()
    mst = minimum_spanning_tree(graph).tocoo()
    order = np.argsort(mst.data, kind="stable")
    ea, eb = mst.row[order].tolist(), mst.col[order].tolist()
    ew = (mst.data[order] - 1.0).astype(np.int64).tolist()
    parent = list(range(n_minima))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    # Minima ids are in rank order, so the root with the smaller id holds the lower minimum.
    for u, v, level in zip(ea, eb, ew, strict=True):
        ru, rv = find(u), find(v)
        if ru == rv:
            continue
        elder, younger = (ru, rv) if ru < rv else (rv, ru)
        death[younger] = level
        into[younger] = elder
        parent[younger] = elder
    return death, into


def barrier_height(
    values: ArrayLike,
    connectivity: str = "full",
    global_tol: float | None = None,
) -> BarrierResult:
    """Union-find flooding of ``values`` sampled on a periodic grid (every axis wraps).

    ``global_tol``: minima within this of the lowest value count as global and are left out of
    ΔE_max (a degenerate global set such as the U_0 = 0 plateau, or symmetric copies of the global
    minimum that differ by rounding, is not a trap). Default: 1e-9 × (max − min) of ``values``.
    ΔE_max is 0 when no non-global minimum exists. Each axis needs at least 3 points so that
    ± neighbours differ.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 0 or min(v.shape) < 3:
        raise ValueError(f"need at least 3 points along every axis, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    if global_tol is None:
        global_tol = 1e-9 * float(np.ptp(v))
    shape, size = v.shape, v.size
    itype = np.int32 if size < np.iinfo(np.int32).max else np.int64
    flat = v.ravel()
    order = np.argsort(flat, kind="stable").astype(itype)
    rank = np.empty(size, dtype=itype)
    rank[order] = np.arange(size, dtype=itype)
    rank_grid = rank.reshape(shape)
    offsets = neighbour_offsets(v.ndim, connectivity)

    # Steepest descent by rank: the lowest of self and all neighbours.
    best = rank_grid.copy()
    for off in offsets:
        np.minimum(best, _shifted(rank_grid, off), out=best)
    pointer = order[best.ravel()]
    is_min = pointer == np.arange(size, dtype=itype)
    while True:
        jumped = pointer[pointer]
        if np.array_equal(jumped, pointer):
            break
        pointer = jumped

    minima_flat = np.flatnonzero(is_min)
    minima_flat = minima_flat[np.argsort(rank[minima_flat], kind="stable")]
    n_min = minima_flat.size
    # Basin id (minima in rank order) of every point, looked up through its minimum's flat index.
    basin_id = np.zeros(size, dtype=itype)
    basin_id[minima_flat] = np.arange(n_min, dtype=itype)
    labels_flat = basin_id[pointer]
    del pointer, basin_id
    labels = labels_flat.reshape(shape)

    # Passes between adjacent basins: the lowest max(rank_p, rank_q) over cross-label grid edges.
    keys, levels = [], []
    for off in _half_offsets(offsets):
        nb_lab = _shifted(labels, off)
        cross = labels != nb_lab
        la, lb = labels[cross].astype(np.int64), nb_lab[cross].astype(np.int64)
        lvl = np.maximum(rank_grid[cross], _shifted(rank_grid, off)[cross]).astype(np.int64)
        key = np.minimum(la, lb) * n_min + np.maximum(la, lb)
        keys.append(key)
        levels.append(lvl)
    key, lvl = np.concatenate(keys), np.concatenate(levels)  # ≥ 1 axis, so ≥ 1 offset
    srt = np.lexsort((lvl, key))
    key, lvl = key[srt], lvl[srt]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    key, lvl = key[first], lvl[first]

    death_rank, into = _kruskal_elder(key // n_min, key % n_min, lvl, n_min)
    has_saddle = death_rank >= 0
    saddle_flat = np.where(has_saddle, order[np.maximum(death_rank, 0)], -1)
    saddle_value = np.where(has_saddle, flat[np.maximum(saddle_flat, 0)], np.inf)
    saddle_index = np.where(
        has_saddle[:, None],
        np.stack(np.unravel_index(np.maximum(saddle_flat, 0), shape), axis=-1),
        -1,
    ).astype(np.int64)
    minima_value = flat[minima_flat]
    non_global = has_saddle & (minima_value > minima_value[0] + global_tol)
    delta = (
        float(np.max(saddle_value[non_global] - minima_value[non_global]))
        if non_global.any()
        else 0.0
    )
    return BarrierResult(
        minima_index=np.stack(np.unravel_index(minima_flat, shape), axis=-1).astype(np.int64),
        minima_value=minima_value,
        saddle_index=saddle_index,
        saddle_value=saddle_value,
        merges_into=into,
        delta_e_max=delta,
        global_tol=global_tol,
        connectivity=connectivity,
        labels=labels.astype(np.int64),
    )


# --------------------------------------------------------------------------------------------------
# S1: InfoNCE on (S¹)^4


@dataclass(frozen=True)
class S1Barrier:
    """ΔE_max of F_β̄ and U_0 on the n³ quotient torus, c* = 1/ΔE_max(U_0) (annealing paper, A5) and
    the trap basin's own escape barrier. Angles are (θ1, θ2, θ3) in radians with θ0 = 0."""

    n: int
    beta_bar: float
    kappa_s: float
    connectivity: str
    delta_e_max_u0: float
    delta_e_max_f: float
    c_star: float  # 1/ΔE_max(U_0): the A5 constant of the normalised dynamics P2
    c_star_f: float  # 1/ΔE_max(F_β̄): the same at finite β̄
    trap_u0: float
    trap_barrier_u0: float
    trap_barrier_f: float
    trap_saddle_u0_angles: FloatArray
    trap_is_minimum_u0: bool
    trap_is_minimum_f: bool
    f_result: BarrierResult


def _trap_grid_index(n: int) -> tuple[int, int, int]:
    if n % 4:
        raise ValueError(
            "n must be divisible by 4 so that the trap (180°, 90°, 270°) is on the grid"
        )
    idx = np.rint(S1_TRAP_ANGLES[1:] / (2.0 * np.pi) * n).astype(int) % n
    return int(idx[0]), int(idx[1]), int(idx[2])


def _trap_basin(res: BarrierResult, trap: tuple[int, int, int]) -> tuple[float, IntArray, bool]:
    m = res.basin_of(trap)
    return float(res.barriers[m]), res.saddle_index[m], bool(np.all(res.minima_index[m] == trap))


def s1_barrier(
    n: int = 128,
    beta_bar: float = 20.0,
    kappa_s: float = 1.0,
    connectivity: str = "full",
    global_tol: float | None = None,
) -> S1Barrier:
    """Flood F_β̄ and U_0 of S1 on the n³ rotation-quotiented torus (n divisible by 4)."""
    trap = _trap_grid_index(n)
    land = s1_torus_landscape(n, beta_bar, kappa_s)
    ru = barrier_height(land.u0, connectivity, global_tol=global_tol)
    rf = barrier_height(land.free_energy, connectivity, global_tol=global_tol)
    bu, su, mu = _trap_basin(ru, trap)
    bf, sf, mf = _trap_basin(rf, trap)
    step = 2.0 * np.pi / n
    return S1Barrier(
        n=n,
        beta_bar=beta_bar,
        kappa_s=kappa_s,
        connectivity=connectivity,
        delta_e_max_u0=ru.delta_e_max,
        delta_e_max_f=rf.delta_e_max,
        c_star=1.0 / ru.delta_e_max if ru.delta_e_max > 0 else np.inf,
        c_star_f=1.0 / rf.delta_e_max if rf.delta_e_max > 0 else np.inf,
        trap_u0=float(land.u0[trap]),
        trap_barrier_u0=bu,
        trap_barrier_f=bf,
        trap_saddle_u0_angles=su * step,
        trap_is_minimum_u0=mu,
        trap_is_minimum_f=mf,
        f_result=rf,
    )


# --------------------------------------------------------------------------------------------------
# Quench: basin membership by gradient descent


@dataclass(frozen=True)
class QuenchResult:
    z: FloatArray  # (..., particles, dim) final configurations
    u0: FloatArray  # (...,) U_0 at the end
    is_global: NDArray[np.bool_]  # U_0 < global_tol: the configuration reached U* = {U_0 = 0}
    converged: NDArray[np.bool_]  # tangent gradient below tol before max_steps
    steps: int  # iterations run (the slowest configuration)


def _tangent(g: FloatArray, z: FloatArray) -> FloatArray:
    return g - np.sum(g * z, axis=-1, keepdims=True) * z


def quench(
    z: ArrayLike,
    grad_fn: Callable[[FloatArray], FloatArray],
    *,
    u0_fn: Callable[[FloatArray], FloatArray],
    step: float = 1e-2,
    max_steps: int = 20_000,
    tol: float = 1e-7,
    global_tol: float = 1e-6,
    stop_at_global: bool = True,
) -> QuenchResult:
    """Projected Riemannian gradient descent on products of spheres, all configurations at once.

    ``grad_fn`` maps (k, particles, dim) to the Euclidean gradient (e.g. of F_β̄, see
    :func:`~infonce_lab.simulation.landscape.free_energy_grad_fn`); only its tangent part is used.
    A configuration stops once its largest per-particle tangent gradient falls below ``tol``, so
    finished ones cost nothing. The step must stay below ~2/λ_max of the Hessian: λ_max of F_β̄
    grows like β̄·κ_s², so step = 1e-2 is stable up to β̄·κ_s² of a few hundred.

    ``stop_at_global`` also stops a configuration as soon as U_0 < ``global_tol``. Deep in U* the
    F_β̄ landscape is exponentially flat (gradients ~ exp(−β̄·gap)), so waiting for ``tol`` there
    costs thousands of steps for nothing: since U_0 ≤ F_β̄ ≤ U_0 + log(#candidates)/β̄ and descent
    never raises F_β̄, a point of U* can no longer reach a non-global minimum whose F_β̄ exceeds
    log(#candidates)/β̄ (for S1: log 3/β̄ < κ_s = U_0 of the trap). Such points count as converged.
    """
    z0 = np.asarray(z, dtype=np.float64)
    batch_shape = z0.shape[:-2]
    cur = z0.reshape((-1,) + z0.shape[-2:]).copy()
    cur /= np.linalg.norm(cur, axis=-1, keepdims=True)
    active = np.arange(cur.shape[0])
    converged = np.zeros(cur.shape[0], dtype=bool)
    it = 0
    while active.size and it < max_steps:
        za = cur[active]
        g = _tangent(grad_fn(za), za)
        done = np.max(np.linalg.norm(g, axis=-1), axis=-1) < tol
        if stop_at_global:
            done |= np.asarray(u0_fn(za)) < global_tol
        converged[active[done]] = True
        keep = ~done
        za, g = za[keep], g[keep]
        za = za - step * g
        za /= np.linalg.norm(za, axis=-1, keepdims=True)
        active = active[keep]
        cur[active] = za
        it += 1
    final_u0 = np.asarray(u0_fn(cur))
    return QuenchResult(
        z=cur.reshape(z0.shape),
        u0=final_u0.reshape(batch_shape),
        is_global=(final_u0 < global_tol).reshape(batch_shape),
        converged=converged.reshape(batch_shape),
        steps=it,
    )


