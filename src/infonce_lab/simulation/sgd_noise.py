"""Mini-batch SGD's own gradient noise as the SDE's noise (annealing paper §4), on S1's landscape.

§4 of the annealing paper: "standard mini-batch SGD can be viewed as an approximation of this
SDE, where the stochasticity of the mini-batch gradient serves as the implicit noise source …
For SGD to faithfully track the SDE, the learning rate η_k must be carefully chosen in relation
to the inverse temperature β_k and the covariance of the gradient noise."

Here S1 (InfoNCE on (S¹)⁴, two positive pairs, chains started in the interleaved trap; see
:mod:`infonce_lab.simulation.s1`) is run at the slow log schedule β = c·ln(t + K) with
c = ``c_ratio``·c* (c* = 1/ΔE_max(U₀) = 16/κ_s, our derivation for S1, which S1's watershed
reproduces) under the normalised drift (P2: −grad L/β, the dynamics whose threshold that c* is),
three ways from the same starts, on S1's P2 clock and step rule dt_k = min(dt_max, h/(κ_s²β_k)):

- ``sgd``: θ ← θ − η_k·ĝ_k/β_k with no injected noise, ĝ_k the gradient of a minibatch of
  ``batch`` of the |P| = 4 anchors' terms, drawn uniformly without replacement per chain and step
  and rescaled by |P|/m, so E[ĝ] = grad L (:func:`minibatch_grad_cm`);
- ``gd``: the full gradient and no noise (gradient descent on L/β: the control, which stays in the
  trap because the trap is a local minimum of L(·, β) for every β here);
- ``sde``: the full gradient plus the injected Langevin noise √(2η_k/β_k)·ξ (the annealing paper's
  §4 update, its SDE's Euler–Maruyama discretisation — S1's P2 run, the reference that escapes).

On (S¹)⁴ in angle coordinates the exponential map is angle addition, so these steps are S1's
integrator (``clocked_langevin(space="angles")``) with the noise replaced; every run is repeated
at half the step (dt_max/2, h/2) with independent draws, as S1 does. Chains are labelled trapped
when a quench of F_β̄ from their state ends off the global set (S1's labels).

At the trap the minibatch noise is not zero, and it is not the SDE's. Each anchor's own
coordinate gets no gradient from its term (its two nearest candidates tie), but its negatives do:
anchor (i, j) pushes its two negatives apart from i with force β·q·κ_s each, q = 1/(2 + e^(−βκ_s))
→ ½. The four terms cancel in pairs, so the full gradient vanishes while every term is of size
β·κ_s/2. The noise covariance of the rescaled minibatch mean is (|P| − m)/((|P| − 1)·m) times the
terms' covariance (sampling without replacement): rank 2, on the two "breathing" modes of the pairs
(θ_j − θ_i of each pair — the escape direction), nothing on the stiff relative rotation of the two
pairs. In the P2 step the noise is η·(ĝ − g)/β, of variance η²·λ per step along a noisy mode
(λ = eigenvalue of Cov(ĝ)/β², κ_s²/4 for m = 1), against the SDE's 2η/β: SGD's temperature is
η·β·λ/2 times the SDE's, and the two match only at η* = 2/(β·λ) — 8/(βκ_s²) for m = 1 — four times
the Euler step 2/(κ_s²β) at which the drift at the trap turns unstable. :func:`trap_noise` measures
all of this at the trap (brute force over every minibatch).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from infonce_lab.schedules import LogAnneal
from infonce_lab.simulation.circle import CircleInfoNCE, interleaved_trap, quench, s1_model
from infonce_lab.simulation.langevin import stiffness_rule
from infonce_lab.simulation.s1 import check_times, proportion, proportion_difference

VARIANTS = ("sgd", "gd", "sde")
RESOLUTIONS = ("step", "half_step")
# ΔE_max(U₀) of S1 = κ_s/16 (the S1 watershed's self-check reproduces it), so c* = 16/κ_s.
S1_BARRIER_OVER_KAPPA = 1.0 / 16.0


def subsets(n_terms: int, batch: int) -> NDArray[np.float64]:
    """Every minibatch of ``batch`` of ``n_terms`` terms as its weights (n_subsets, n_terms): 1 on a
    drawn term, 0 elsewhere, times n_terms/batch — so that (1/n_terms)·Σ_a w_a·ℓ_a is the
    minibatch mean (1/m)·Σ_{a∈B} ℓ_a, and its average over the subsets is the full loss."""
    if not 1 <= batch <= n_terms:
        raise ValueError(f"batch must be in [1, {n_terms}], got {batch}")
    rows = [[1.0 if a in s else 0.0 for a in range(n_terms)]
            for s in itertools.combinations(range(n_terms), batch)]
    return np.asarray(rows) * (n_terms / batch)


def _positive_of(model: CircleInfoNCE) -> NDArray[np.float64]:
    """pos_of[q, a] = 1 when the unordered pair q is anchor a's positive pair."""
    q_of = {(int(u), int(v)): q for q, (u, v) in enumerate(zip(model._u, model._v, strict=True))}
    out = np.zeros((len(q_of), model.n_pairs))
    for a, (i, j) in enumerate(model.pairs):
        out[q_of[(min(i, j), max(i, j))], a] = 1.0
    return out


def minibatch_grad_cm(model: CircleInfoNCE, theta: NDArray[np.float64],
                      beta: float | NDArray[np.float64], weights: NDArray[np.float64],
                      pos_of: NDArray[np.float64] | None = None, *,
                      fast_trig: bool = False) -> NDArray[np.float64]:
    """∂/∂θ of (1/|P|)·Σ_a w_a·ℓ_a(θ, β), in the particle-major layout of
    :meth:`CircleInfoNCE.grad_cm`: ``theta`` (N, M), ``beta`` a float or broadcasting against
    (M,), ``weights`` (|P|, M) per anchor term and chain. With every weight 1 it is grad L; with a
    row of :func:`subsets` it is the minibatch gradient. The same closed form as ``grad_cm``, on
    the pair differences θ_u − θ_v: with E_q = exp(βκ_s(cos_q − 1)) and Z_a = Σ_{q ∋ i_a} E_q,
    the pair weight is W_q = E_q·Σ_{a: q ∋ i_a} w_a/Z_a − Σ_{a: q positive of a} w_a.

    ``fast_trig``: the cosines and sines in float32, the rest in float64, as S1's integrator does
    (``grad_cm(fast_trig=True)``: numpy vectorises float32 trigonometry only, ~4× cheaper here;
    the drift error, ~1e-7·βκ_s, is far below one step's noise and the step's own error)."""
    b = np.asarray(beta, dtype=np.float64)
    if float(np.max(b)) * model.kappa >= 350.0:
        raise ValueError("βκ_s ≥ 350: the shifted softmax weights would underflow")
    if pos_of is None:
        pos_of = _positive_of(model)
    d = model._incidence @ theta  # θ_u − θ_v per unordered pair, (Q, M)
    if fast_trig:
        d32 = d.astype(np.float32)
        cos, sin = np.cos(d32).astype(np.float64), np.sin(d32).astype(np.float64)
    else:
        cos, sin = np.cos(d), np.sin(d)
    bk = b * model.kappa
    cos -= 1.0
    cos *= bk
    e = np.exp(cos, out=cos)  # E_q
    z = model._anchor_of.T @ e  # Z_a, (P, M)
    np.divide(weights, z, out=z)
    w = model._anchor_of @ z
    w *= e
    w -= pos_of @ weights
    w *= sin
    w *= -bk / model.n_pairs
    return model._incidence.T @ w


def anchor_grads(model: CircleInfoNCE, theta: NDArray[np.float64], beta: float
                 ) -> NDArray[np.float64]:
    """∇ℓ_a(θ, β) of every anchor term at one configuration θ (N,): (|P|, N)."""
    eye = np.eye(model.n_pairs) * model.n_pairs  # w = |P|·e_a picks ℓ_a out of (1/|P|)Σ w_a ℓ_a
    cols = np.repeat(np.asarray(theta, dtype=np.float64)[:, None], model.n_pairs, axis=1)
    return minibatch_grad_cm(model, cols, beta, eye).T


def minibatch_covariance(grads: NDArray[np.float64], batch: int) -> NDArray[np.float64]:
    """Exact covariance of the rescaled minibatch gradient over every equally likely subset of
    ``batch`` terms (brute force), from the per-term gradients (|P|, N)."""
    w = subsets(grads.shape[0], batch)
    est = w @ grads / grads.shape[0]  # (n_subsets, N)
    d = est - est.mean(axis=0)
    return d.T @ d / est.shape[0]


def trap_noise(kappa_s: float, batch: int, betas: Sequence[float],
               dts: Sequence[float]) -> dict[str, Any]:
    """The minibatch gradient noise at the exact interleaved trap, per β (with the step used at
    that β, ``dts``): the per-anchor gradients, the full gradient, the noise covariance of the
    rescaled minibatch (brute force over the subsets) on the rotation-quotiented tangent space
    (the common rotation, a symmetry, taken out), its trace, eigenvalues and anisotropy, the
    Hessian of L there (finite differences), where the noise lies against the Hessian's modes,
    and SGD's temperature relative to the SDE's."""
    model = s1_model(kappa_s)
    theta = interleaved_trap(2)
    n = model.n
    # An orthonormal basis of the tangent space with the common rotation (1, …, 1)/√N removed.
    basis = np.linalg.qr(np.c_[np.ones(n), np.eye(n)[:, : n - 1]])[0][:, 1:]
    out = []
    for beta, dt in zip(betas, dts, strict=True):
        g = anchor_grads(model, theta, beta)
        cov = basis.T @ minibatch_covariance(g, batch) @ basis
        cov_n = cov / beta**2  # the noise of ĝ/β, the P2 step's drift
        ev = np.linalg.eigvalsh(cov_n)[::-1]
        hess = basis.T @ model.hessian_fd(theta, beta) @ basis
        h_ev, h_vec = np.linalg.eigh(hess)
        # the noise's variance along each Hessian mode (as a share of its trace)
        along = np.einsum("ik,ij,jk->k", h_vec, cov_n, h_vec) / max(float(np.trace(cov_n)), 1e-300)
        nonzero = ev[ev > 1e-9 * ev[0]] if ev[0] > 0 else ev[:0]
        lam = float(ev[0])
        stiff = float(h_ev[-1] / beta)  # P2's drift −grad(L/β): its largest curvature at the trap
        out.append({
            "beta": float(beta), "dt": float(dt),
            "anchor_grads": g.round(12).tolist(),
            "anchor_grad_norms": np.linalg.norm(g, axis=1).tolist(),
            "full_grad_norm": float(np.linalg.norm(g.mean(axis=0))),
            "trace": float(np.trace(cov_n)),
            "eigenvalues": ev.tolist(),
            "rank": int(nonzero.size),
            "anisotropy_nonzero": float(nonzero[0] / nonzero[-1]) if nonzero.size else None,
            "hessian_eigenvalues_p2": (h_ev / beta).tolist(),
            "noise_share_on_hessian_modes": along.tolist(),
            "temperature_ratio": float(dt * beta * lam / 2.0),
            "eta_matching": (2.0 / (beta * lam)) if lam > 0 else None,
            "eta_stability": 2.0 / stiff,
        })
    return {"batch": batch, "terms": model.n_pairs,
            "covariance_factor": (model.n_pairs - batch) / ((model.n_pairs - 1) * batch),
            "note": "covariance of ĝ/β on the tangent space less the common rotation; "
                    "temperature_ratio = dt·β·λ_max/2 (SGD's step noise over the SDE's 2dt/β "
                    "along the noisiest mode); eta_matching = 2/(β·λ_max); eta_stability = "
                    "2/λ_max(Hessian of L/β)",
            "by_beta": out}


def run_sgd_noise(
    *,
    kappa_s: float,
    c_ratio: float,
    K: float,
    batch: int,
    chains: int,
    dt_max: float,
    h: float,
    horizon: float,
    first_check: float,
    beta_bar: float,
    angle_sd: float,
    seed: int,
) -> dict[str, Any]:
    """P_trap(t) of SGD (own minibatch noise, none injected), GD (the noiseless control) and the
    SDE (injected noise, the reference) from the jittered interleaved trap, at the step rule and
    at half of it, and the minibatch noise at the trap (:func:`trap_noise`). Every knob is
    required: the study's values and their defaults live in the params schema
    (``simulation.sgd_noise``)."""
    model = s1_model(kappa_s)
    if not 1 <= batch < model.n_pairs:
        raise ValueError(f"batch must be in [1, {model.n_pairs - 1}]: S1 has {model.n_pairs} "
                         f"anchor terms and a batch of all of them has no noise; got {batch}")
    c_star = 1.0 / (S1_BARRIER_OVER_KAPPA * kappa_s)
    sched = LogAnneal(c=c_ratio * c_star, K=K, time_per_step=1.0, tau_max=1e6)

    def beta_at(t: float) -> float:
        return 1.0 / sched.tau(t)  # type: ignore[arg-type]  # time_per_step = 1: τ of the time

    times = check_times(horizon, first_check)
    rng = np.random.Generator(np.random.SFC64(seed))
    table = subsets(model.n_pairs, batch)
    pos_of = _positive_of(model)
    q_step = 0.8 / (beta_bar * kappa_s**2)  # S1's quench step (monotone along every direction)

    def trapped(th_cm: NDArray[np.float64]) -> NDArray[np.bool_]:
        return ~quench(model, np.moveaxis(th_cm, 0, -1), beta_bar, step=q_step).is_global

    n_var = len(VARIANTS)
    start = interleaved_trap(2)[:, None] + angle_sd * rng.standard_normal((model.n, chains))
    counts: dict[str, dict[str, list[int]]] = {}
    steps: dict[str, int] = {}
    spread: dict[str, dict[str, float | None]] = {}
    for res in RESOLUTIONS:
        rule = stiffness_rule("P2", dt_max, h, kappa_s)
        rule = rule if res == "step" else rule.halved()
        # particle-major (N, variants·chains): every variant from the same starts
        theta = np.tile(start, (1, n_var))
        sgd, noisy = slice(0, chains), slice(2 * chains, 3 * chains)
        weights = np.ones((model.n_pairs, n_var * chains))
        inside = trapped(theta).reshape(n_var, chains)
        k = {v: [int(inside[i].sum())] for i, v in enumerate(VARIANTS)}
        clock, n_steps = 0.0, 0
        for t_check in times:
            while clock < t_check - 1e-12 * max(1.0, t_check):
                beta = beta_at(clock)
                dt = min(rule.dt(beta), t_check - clock)
                weights[:, sgd] = table[rng.integers(0, table.shape[0], chains)].T
                g = minibatch_grad_cm(model, theta, beta, weights, pos_of, fast_trig=True)
                theta -= (dt / beta) * g  # P2: drift −grad(L/β)
                theta[:, noisy] += math.sqrt(2.0 * dt / beta) * rng.standard_normal(
                    (model.n, chains))
                clock += dt
                n_steps += 1
            theta %= 2.0 * np.pi
            inside = trapped(theta).reshape(n_var, chains)
            for i, v in enumerate(VARIANTS):
                k[v].append(int(inside[i].sum()))
        counts[res], steps[res] = k, n_steps
        # the spread of the trapped chains along the two breathing modes θ_j − θ_i − π of the
        # pairs (where the minibatch noise acts), at the horizon
        br = np.stack([theta[1] - theta[0], theta[3] - theta[2]]) - np.pi
        br = (br + np.pi) % (2.0 * np.pi) - np.pi
        spread[res] = {v: (float(np.sqrt(np.mean(br[:, i * chains:(i + 1) * chains][:, ok] ** 2)))
                           if (ok := inside[i]).any() else None)
                       for i, v in enumerate(VARIANTS)}

    t_all = [0.0, *times]

    def curve(res: str, v: str) -> dict[str, Any]:
        ks = counts[res][v]
        ends = [proportion(x, chains) for x in ks]
        return {"t": t_all, "k_trap": ks, "p_trap": [e["value"] for e in ends],
                "trap_ci": [[e["low"] for e in ends], [e["high"] for e in ends]]}

    at_end = {v: {res: proportion(counts[res][v][-1], chains) for res in RESOLUTIONS}
              for v in VARIANTS}
    sgd_minus_sde = {res: proportion_difference(counts[res]["sgd"][-1], chains,
                                                counts[res]["sde"][-1], chains)
                     for res in RESOLUTIONS}
    b0, b_end = beta_at(0.0), beta_at(horizon)
    step_rule = stiffness_rule("P2", dt_max, h, kappa_s)
    noise = trap_noise(kappa_s, batch, [b0, b_end], [step_rule.dt(b0), step_rule.dt(b_end)])
    # In-well spread along a breathing mode at β(T), quasi-static (the well relaxes in ~1/h_b ≪ T):
    # along a unit mode of curvature h_b (P2) the step x ← (1 − ηh_b)x + noise has stationary
    # variance σ²/(ηh_b(2 − ηh_b)), σ² = η²λ for SGD and 2η/β for the SDE; θ_j − θ_i = √2·x.
    end = noise["by_beta"][-1]
    h_b, lam = min(end["hessian_eigenvalues_p2"]), end["eigenvalues"][0]
    for res, eta in (("step", step_rule.dt(b_end)), ("half_step", step_rule.halved().dt(b_end))):
        spread[res]["sgd_predicted"] = math.sqrt(2 * eta * lam / (h_b * (2 - eta * h_b)))
        spread[res]["sde_in_well_predicted"] = math.sqrt(
            2 * (2 / b_end) / (h_b * (2 - eta * h_b)))
    return {
        "c_star": c_star, "c_ratio": c_ratio, "c": c_ratio * c_star, "K": K,
        "kappa_s": kappa_s, "batch": batch, "terms": model.n_pairs, "chains": chains,
        "horizon": horizon, "beta_bar": beta_bar, "angle_sd": angle_sd,
        "beta_start": b0, "beta_end": b_end, "check_times": times,
        "convergence": {"rule": "dt_k = min(dt_max, h/(κ_s²·β_k)) (S1's P2 rule); every run "
                                "again at dt_max/2, h/2",
                        "dt_max": dt_max, "h": h, "steps": steps},
        "curves": {res: {v: curve(res, v) for v in VARIANTS} for res in RESOLUTIONS},
        "p_trap_end": at_end,
        "sgd_minus_sde": sgd_minus_sde,
        "breathing_rms": {**spread, "note": "RMS of θ_j − θ_i − π over both pairs of the chains "
                                            "trapped at T; predicted: quasi-static in the trap's "
                                            "well at β(T) from its curvature and the noise"},
        "trap_noise": noise,
    }
