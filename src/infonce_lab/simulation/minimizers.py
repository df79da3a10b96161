"""Prop. C.2 of arXiv 2603.12552: "Z* minimizes U_0 iff sim(z_i, z_j) = S_max for every positive
pair (i, j)", against the minimizers that gradient descent actually finds.

U_0 ≥ 0 everywhere (each bracket max_{k≠i} s_ik − s_ij is ≥ 0, the positive being a candidate), so
every configuration with U_0 = 0 is a global minimizer. U_0 = 0 exactly wherever every positive is
its anchor's most similar candidate (by U_0's definition) — an open set when the maximum is strict,
on which s_ij < S_max is allowed. A configuration is *certified* here when every anchor's positive
beats its best negative by more than ``margin``: then U_0 = 0 exactly, whatever the round-off.

- "if": configurations with every positive pair collapsed (s_ij = S_max) at random positions
  have U_0 = 0 (the proposition's easy direction);
- "only if": random starts quenched along −∇F_β̄ until they enter U* (and a little further, so
  that the positive is a strict maximum), then certified; a certified minimizer with a positive
  similarity below S_max − ``tol`` contradicts the proposition;
- the measure of the minimizer set: the fraction of uniformly random configurations that are
  certified minimizers (positive, so the set is not the measure-zero {s_ij = S_max}).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from infonce_lab.simulation.barriers import quench as sphere_quench
from infonce_lab.simulation.circle import quench as circle_quench
from infonce_lab.simulation.circle import s1_model
from infonce_lab.simulation.hessian import _pairs_of, sphere_brackets
from infonce_lab.simulation.landscape import free_energy_grad_fn
from infonce_lab.simulation.landscape import u0 as landscape_u0


def _summary(brackets: np.ndarray, s_pos: np.ndarray, u0: np.ndarray, kappa_s: float,
             margin: float, tol: float) -> dict[str, Any]:
    certified = np.all(brackets < -margin, axis=-1)
    min_pos = s_pos.min(-1)
    below = certified & (min_pos < kappa_s - tol)
    return {
        "starts": int(certified.size),
        "minimizers": int(certified.sum()),
        "violations": int(below.sum()),
        "u0_max_certified": float(u0[certified].max()) if certified.any() else None,
        "min_positive_sim": float(min_pos[certified].min()) if certified.any() else None,
        "median_min_positive_sim": float(np.median(min_pos[certified])) if certified.any()
        else None,
        "s_max": kappa_s,
    }


def run_prop_c2(
    *,
    starts: int,
    uniform: int,
    beta_bar: float = 20.0,
    extra_steps: int = 200,
    margin: float = 1e-6,
    tol: float = 1e-3,
    kappa_s: float = 1.0,
    seed: int,
) -> dict[str, Any]:
    """Both directions of Prop. C.2 on S1's (S¹)^4 and on (S²)^6 with three pairs."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"beta_bar": beta_bar, "margin": margin, "tol": tol, "settings": {}}

    # S1 in angles: quench until U* is entered, then `extra_steps` more of the descent.
    model = s1_model(kappa_s)
    theta = rng.uniform(0, 2 * np.pi, (starts, 4))
    q = circle_quench(model, theta, beta_bar)
    q = circle_quench(model, q.theta, beta_bar, stop_at_global=False, max_steps=extra_steps)
    s1 = _summary(model.brackets(q.theta), model.positive_sims(q.theta), model.u0(q.theta),
                  kappa_s, margin, tol)
    uni = rng.uniform(0, 2 * np.pi, (uniform, 4))
    s1["uniform_fraction"] = float(np.mean(np.all(model.brackets(uni) < -margin, axis=-1)))
    collapsed = np.repeat(rng.uniform(0, 2 * np.pi, (uniform, 2)), 2, axis=1)  # θ_0 = θ_1, …
    s1["if_configs"] = uniform
    s1["if_u0_max"] = float(model.u0(collapsed).max())
    out["settings"]["S1 (S¹)^4, 2 pairs"] = s1

    # (S²)^6 with three pairs, on unit vectors.
    pairs = _pairs_of(3)
    z = rng.standard_normal((starts, 6, 3))
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    grad = free_energy_grad_fn(pairs, beta_bar, kappa_s)

    def u0_fn(zz: np.ndarray) -> np.ndarray:
        return landscape_u0(zz, pairs, kappa_s)

    qz = sphere_quench(z, grad, u0_fn=u0_fn)
    qz = sphere_quench(qz.z, grad, u0_fn=u0_fn, stop_at_global=False, max_steps=extra_steps)
    br, sp = sphere_brackets(qz.z, pairs, kappa_s)
    s2 = _summary(br, sp, u0_fn(qz.z), kappa_s, margin, tol)
    zu = rng.standard_normal((uniform, 6, 3))
    zu /= np.linalg.norm(zu, axis=-1, keepdims=True)
    s2["uniform_fraction"] = float(np.mean(np.all(sphere_brackets(zu, pairs, kappa_s)[0]
                                                  < -margin, axis=-1)))
    zc = rng.standard_normal((uniform, 3, 3))
    zc = np.repeat(zc / np.linalg.norm(zc, axis=-1, keepdims=True), 2, axis=1)
    s2["if_configs"] = uniform
    s2["if_u0_max"] = float(u0_fn(zc).max())
    out["settings"]["(S²)^6, 3 pairs"] = s2
    return out
