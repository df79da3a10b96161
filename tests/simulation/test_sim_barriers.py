"""Barrier finder (union-find flooding on periodic grids), InfoNCE landscape on spheres, S1."""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest
import torch

from infonce_lab.simulation.barriers import (
    barrier_height,
    neighbour_offsets,
    quench,
    s1_barrier,
)
from infonce_lab.simulation.landscape import (
    S1_PAIRS,
    S1_TRAP_ANGLES,
    free_energy,
    free_energy_grad_fn,
    infonce_grad,
    infonce_loss,
    s1_angles_to_z,
    s1_torus_landscape,
    u0,
)
from references import s1_quench


def _grid(n: int) -> np.ndarray:
    return 2.0 * np.pi * np.arange(n) / n


def _double_well(theta: np.ndarray, a: float) -> np.ndarray:
    # Our S0: minima at 0 (−1 − a) and π (−1 + a), saddle where cos θ = −a/4 (1 + a²/8).
    return -np.cos(2.0 * theta) - a * np.cos(theta)


def _dw_barrier(a: float) -> float:
    return (1.0 + a * a / 8.0) - (-1.0 + a)


# ------------------------------------------------------------------------------------------------
# Brute-force reference: Prim-like bottleneck search from every local minimum, pure Python.


def _brute_force(v: np.ndarray, connectivity: str) -> dict[tuple[int, ...], tuple[float, float]]:
    """{minimum index: (value, merge level)} with ties broken by flat index, as the finder does."""
    shape = v.shape
    offsets = [tuple(o) for o in neighbour_offsets(v.ndim, connectivity)]
    points = list(itertools.product(*(range(s) for s in shape)))
    key = {p: (v[p], np.ravel_multi_index(p, shape)) for p in points}

    def nbrs(p):
        return [tuple((p[d] + o[d]) % shape[d] for d in range(len(shape))) for o in offsets]

    out = {}
    for p in points:
        if not all(key[q] > key[p] for q in nbrs(p)):
            continue
        # Visit points in order of the lowest attainable path maximum; stop at the first lower one.
        heap = [(key[p], p)]
        seen = {p}
        level = (np.inf, -1)
        while heap:
            lv, q = heapq.heappop(heap)
            if key[q] < key[p]:
                level = lv
                break
            for r in nbrs(q):
                if r not in seen:
                    seen.add(r)
                    heapq.heappush(heap, (max(lv, key[r]), r))
        out[p] = (float(v[p]), float(level[0]))
    return out


def _as_dict(res) -> dict[tuple[int, ...], tuple[float, float]]:
    return {
        tuple(int(i) for i in idx): (float(m), float(s))
        for idx, m, s in zip(res.minima_index, res.minima_value, res.saddle_value, strict=True)
    }


def _assert_same(got: dict, ref: dict) -> None:
    assert sorted(got) == sorted(ref)
    np.testing.assert_allclose([got[k] for k in sorted(ref)], [ref[k] for k in sorted(ref)])


# ------------------------------------------------------------------------------------------------
# barrier_height


@pytest.mark.parametrize("connectivity", ["face", "full"])
def test_1d_double_well_closed_form(connectivity):
    a, n = 0.5, 400
    res = barrier_height(_double_well(_grid(n), a), connectivity)
    assert res.minima_index[:, 0].tolist() == [0, n // 2]
    np.testing.assert_allclose(res.minima_value, [-1.0 - a, -1.0 + a], atol=1e-12)
    h = 2.0 * np.pi / n
    assert res.saddle_value[1] == pytest.approx(1.0 + a * a / 8.0, abs=2.0 * h * h)
    assert res.merges_into.tolist() == [-1, 0]
    assert res.delta_e_max == pytest.approx(_dw_barrier(a), abs=2.0 * h * h)
    # The saddle point lies at cos θ = −a/4 on either side.
    theta_s = res.saddle_index[1, 0] * h
    assert np.cos(theta_s) == pytest.approx(-a / 4.0, abs=2.0 * h)
    # Labels: every point left of the saddles belongs to the global basin.
    assert res.labels is not None and res.labels[0] == 0 and res.labels[n // 2] == 1


@pytest.mark.parametrize("connectivity", ["face", "full"])
def test_2d_separable_wells_closed_form(connectivity):
    a, b, n = 0.5, 0.2, 128
    th = _grid(n)
    v = _double_well(th, a)[:, None] + _double_well(th, b)[None, :]
    res = barrier_height(v, connectivity)
    got = {
        tuple(int(i) for i in idx): bar
        for idx, bar in zip(res.minima_index, res.barriers, strict=True)
    }
    h = 2.0 * np.pi / n
    expected = {
        (0, 0): np.inf,
        (n // 2, 0): _dw_barrier(a),
        (0, n // 2): _dw_barrier(b),
        (n // 2, n // 2): min(_dw_barrier(a), _dw_barrier(b)),
    }
    assert set(got) == set(expected)
    for k, e in expected.items():
        assert got[k] == pytest.approx(e, abs=4.0 * h * h)
    assert res.delta_e_max == pytest.approx(max(_dw_barrier(a), _dw_barrier(b)), abs=4.0 * h * h)
    # (π, π) escapes along the easier axis (x), towards (0, π); by then (0, π) has joined the
    # global basin, so the superbasin it merges into is the global minimum's.
    idx = {tuple(int(i) for i in m): k for k, m in enumerate(res.minima_index)}
    k = idx[(n // 2, n // 2)]
    assert res.merges_into[k] == 0 and res.merges_into[idx[(0, n // 2)]] == 0
    assert res.saddle_index[k, 1] == n // 2
    assert np.cos(res.saddle_index[k, 0] * h) == pytest.approx(-a / 4.0, abs=2.0 * h)


def test_3d_separable_and_grid_refinement():
    a = 0.5
    errors = []
    for n in (24, 48, 96):
        th = _grid(n)
        v = (
            _double_well(th, a)[:, None, None]
            + _double_well(th, 0.3)[None, :, None]
            + 0.5 * _double_well(th, 0.1)[None, None, :]
        )
        res = barrier_height(v, "full")
        assert len(res.minima_value) == 8
        # Each axis is its own double well; the deepest trap is the one excited along y only.
        errors.append(
            abs(res.delta_e_max - max(_dw_barrier(a), _dw_barrier(0.3), 0.5 * _dw_barrier(0.1)))
        )
    # The saddle is off-grid by O(h), so the error is O(h²): ×4 smaller per halving of h.
    assert errors[2] < errors[1] < errors[0]
    assert errors[2] < 1e-3


def test_refinement_oblique_saddle_converges():
    # The S0 double well along the diagonal u = x + y, stiffened across it (v = x − y): the local
    # minima (π/2, π/2) and (3π/2, 3π/2) escape along the diagonal, which face connectivity can
    # only follow by zigzagging. Global minima: (0, 0) and (π, π), at the same level.
    a, w = 0.5, 2.0

    def pot(n):
        x = _grid(n)
        u, v = x[:, None] + x[None, :], x[:, None] - x[None, :]
        return _double_well(u, a) + w * (1.0 - np.cos(v))

    for connectivity in ("face", "full"):
        errs, spurious = [], []
        for n in (32, 64, 128, 256):
            res = barrier_height(pot(n), connectivity)
            got = {
                tuple(int(i) for i in m): b
                for m, b in zip(res.minima_index, res.barriers, strict=True)
            }
            for m in ((n // 4, n // 4), (3 * n // 4, 3 * n // 4)):
                assert got.pop(m) == pytest.approx(res.delta_e_max)
            assert got.pop((n // 2, n // 2)) > res.delta_e_max  # the twin global minimum
            assert res.is_global[1] and got.pop((0, 0)) == np.inf
            errs.append(abs(res.delta_e_max - _dw_barrier(a)))
            spurious.append(max(got.values(), default=0.0))
        assert all(e2 < e1 for e1, e2 in itertools.pairwise(errs)), errs
        assert errs[-1] < 2e-3
        # Face connectivity turns the continuum's saddles into shallow grid minima whose depth
        # vanishes with h; full connectivity has none here.
        assert spurious[-1] < 1e-3 and (connectivity == "face" or spurious == [0.0] * 4)


@pytest.mark.parametrize("connectivity", ["face", "full"])
def test_2d_wells_match_brute_force_minimax(connectivity):
    rng = np.random.default_rng(3)
    n = 36
    x = _grid(n)
    v = np.zeros((n, n))
    for _ in range(7):  # von Mises wells: smooth and periodic, with unequal depths and widths
        cx, cy = rng.uniform(0, 2 * np.pi, 2)
        depth, k = rng.uniform(0.5, 2.0), rng.uniform(2.0, 6.0)
        v -= depth * np.exp(k * (np.cos(x[:, None] - cx) + np.cos(x[None, :] - cy) - 2.0))
    res = barrier_height(v, connectivity)
    ref = _brute_force(v, connectivity)
    _assert_same(_as_dict(res), ref)
    assert len(ref) >= 3  # the test is only informative with several basins


def test_plateaus_and_ties_match_brute_force():
    rng = np.random.default_rng(0)
    v = np.round(rng.normal(size=(14, 15)), 0)  # heavy ties: plateaus everywhere
    for connectivity in ("face", "full"):
        res = barrier_height(v, connectivity)
        _assert_same(_as_dict(res), _brute_force(v, connectivity))
        # Every grid point is labelled with a basin whose minimum is not above it.
        assert res.labels is not None
        assert np.all(res.minima_value[res.labels] <= v)
    # Global tolerance: minima at the global level are not counted as traps.
    flat = np.zeros((9, 9))
    flat[4, 4] = -1.0
    flat[0, 0] = -1.0
    flat[2, 2] = 5.0
    assert barrier_height(flat, global_tol=1e-12).delta_e_max == 0.0


def test_barrier_height_rejects_small_axes():
    with pytest.raises(ValueError):
        barrier_height(np.zeros((2, 5)))
    with pytest.raises(ValueError):
        barrier_height(np.zeros(5), connectivity="edge")


# ------------------------------------------------------------------------------------------------
# InfoNCE landscape


def _random_sphere(rng, shape):
    z = rng.normal(size=shape)
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def test_loss_matches_cross_entropy_and_grad_matches_autograd():
    rng = np.random.default_rng(1)
    z = _random_sphere(rng, (3, 6, 3))
    pairs = np.array([[0, 1], [1, 0], [2, 3], [3, 2], [4, 5], [0, 5]])  # anchor 0 twice
    beta, kappa = 2.5, 1.7
    zt = torch.tensor(z, requires_grad=True)
    s = kappa * zt @ zt.transpose(-1, -2)
    s = s.masked_fill(torch.eye(6, dtype=torch.bool), float("-inf"))
    logits = beta * s[:, pairs[:, 0], :]  # (3, pairs, 6)
    ce = (
        torch.nn.functional.cross_entropy(
            logits.reshape(-1, 6), torch.tensor(pairs[:, 1]).repeat(3), reduction="none"
        )
        .reshape(3, -1)
        .mean(-1)
    )
    ce.sum().backward()
    np.testing.assert_allclose(infonce_loss(z, pairs, beta, kappa), ce.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(infonce_grad(z, pairs, beta, kappa), zt.grad.numpy(), atol=1e-12)


def test_grad_central_differences_at_large_beta():
    rng = np.random.default_rng(2)
    z = _random_sphere(rng, (4, 2))
    beta, eps = 200.0, 1e-6  # exp overflow would show up here without the max shift
    g = infonce_grad(z, S1_PAIRS, beta)
    fd = np.zeros_like(z)
    for i, d in itertools.product(range(4), range(2)):
        e = np.zeros_like(z)
        e[i, d] = eps
        fd[i, d] = (infonce_loss(z + e, S1_PAIRS, beta) - infonce_loss(z - e, S1_PAIRS, beta)) / (
            2 * eps
        )
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_u0_zero_when_positives_are_nearest_and_kappa_at_trap():
    z = s1_angles_to_z(np.deg2rad([0.0, 10.0, 90.0, 100.0]))
    assert u0(z, S1_PAIRS) == 0.0
    for kappa in (1.0, 2.5):
        trap = s1_angles_to_z(S1_TRAP_ANGLES)
        assert u0(trap, S1_PAIRS, kappa) == pytest.approx(kappa, abs=1e-12)  # our S1 trap
    # L/β → U_0 from above, within log(#candidates)/β.
    zz = _random_sphere(np.random.default_rng(4), (50, 4, 2))
    for beta in (5.0, 50.0, 500.0):
        gap = free_energy(zz, S1_PAIRS, beta) - u0(zz, S1_PAIRS)
        assert np.all(gap >= -1e-12) and np.all(gap <= np.log(3.0) / beta + 1e-12)


def test_torus_grid_matches_generic_loss():
    n, beta, kappa = 12, 20.0, 1.3
    land = s1_torus_landscape(n, beta, kappa, slab_rows=5)
    th = land.angles
    g = np.stack(np.meshgrid(th, th, th, indexing="ij"), axis=-1)
    z = s1_angles_to_z(np.concatenate([np.zeros(g.shape[:-1] + (1,)), g], axis=-1))
    np.testing.assert_allclose(land.free_energy, free_energy(z, S1_PAIRS, beta, kappa), atol=1e-12)
    np.testing.assert_allclose(land.u0, u0(z, S1_PAIRS, kappa), atol=1e-12)


# ------------------------------------------------------------------------------------------------
# S1


def test_s1_trap_barrier():
    res = s1_barrier(n=128, beta_bar=20.0, kappa_s=1.0)
    assert res.trap_u0 == pytest.approx(1.0)
    assert res.trap_is_minimum_u0 and res.trap_is_minimum_f
    # Along the symmetric escape (θ1 = π, θ3 = −θ2) U_0 peaks at cos θ2 = 1/4 with U_0 = 17/16;
    # F_β̄ loses the two-fold tie entropy of half the anchors: ΔE_F ≈ 1/16 − ln 2/(2β̄).
    assert res.trap_barrier_u0 == pytest.approx(1.0 / 16.0, abs=2e-4)
    assert res.trap_barrier_f == pytest.approx(1.0 / 16.0 - np.log(2.0) / 40.0, abs=2e-4)
    assert res.delta_e_max_u0 == pytest.approx(res.trap_barrier_u0)
    assert res.delta_e_max_f == pytest.approx(res.trap_barrier_f)
    assert res.c_star == pytest.approx(1.0 / res.delta_e_max_u0)
    assert np.cos(res.trap_saddle_u0_angles[1]) == pytest.approx(0.25, abs=0.02)


def test_s1_barrier_scales_with_kappa():
    r1 = s1_barrier(n=32, beta_bar=50.0, kappa_s=1.0)
    r2 = s1_barrier(n=32, beta_bar=25.0, kappa_s=2.0)
    # L depends on β·κ_s only, so F_{β,κ} = κ·F_{βκ,1} and U_0 is linear in κ_s.
    assert r2.delta_e_max_u0 == pytest.approx(2.0 * r1.delta_e_max_u0)
    assert r2.delta_e_max_f == pytest.approx(2.0 * r1.delta_e_max_f)


@pytest.mark.parametrize("beta_bar", [20.0, 50.0])
def test_quench_trap_and_global(beta_bar):
    rng = np.random.default_rng(5)
    near_trap = S1_TRAP_ANGLES + rng.normal(0.0, 0.05, size=(200, 4))
    r = s1_quench(near_trap, beta_bar)
    assert r.converged.all() and not r.is_global.any()
    np.testing.assert_allclose(r.u0, 1.0, atol=1e-6)
    near_global = np.deg2rad([0.0, 40.0, 100.0, 150.0]) + rng.normal(0.0, 0.05, size=(200, 4))
    r = s1_quench(near_global, beta_bar)
    assert r.is_global.all() and (r.u0 < 1e-6).all()


def test_quench_generic_without_early_stop():
    # Near the trap descent reaches the gradient tolerance; in U* F_β̄ is exponentially flat, so a
    # point there only creeps downhill, never leaving U* (hence the early stop in s1_quench).
    beta_bar = 20.0
    angles = np.stack([S1_TRAP_ANGLES + [0.03, -0.02, 0.04, 0.01], np.deg2rad([0, 40, 100, 150])])
    z = s1_angles_to_z(angles)
    r = quench(
        z,
        free_energy_grad_fn(S1_PAIRS, beta_bar),
        u0_fn=lambda zz: u0(zz, S1_PAIRS),
        max_steps=3000,
        stop_at_global=False,
    )
    assert r.z.shape == z.shape and r.steps == 3000
    np.testing.assert_allclose(np.linalg.norm(r.z, axis=-1), 1.0)
    assert r.converged[0] and not r.is_global[0] and r.u0[0] == pytest.approx(1.0, abs=1e-6)
    assert r.is_global[1] and not r.converged[1]
    assert free_energy(r.z[1], S1_PAIRS, beta_bar) < free_energy(z[1], S1_PAIRS, beta_bar)
