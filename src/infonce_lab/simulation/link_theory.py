"""The WEINCE paper's link theory where no trained encoder is needed (§2.1–2.2, Table 1,
Thm 2.4, App. C.3): Monte-Carlo winners of random-utility models against their closed-form top-1
links, and a certified bound on how far a temperature can undo a coordinate change.

1. **Table 1 (exact at every K).** Each canonical index model has a Plackett–Luce top-1 law
   p_j = φ(s_j)/Σ_k φ(s_k):
   - Gumbel (translation, §2.1 Eq. 2.3): U_j = s_j/τ + G_j, G Gumbel → φ = exp(s/τ) (softmax);
   - Weibull (common endpoint b = 1, shortfall q(s) = 1 − s): X_j = 1 − (1 − s_j)·W_j,
     W Weibull(β) → φ = (1 − s)^{−β} (the Weibit link of WEINCE's Eq. 3.1);
   - Fréchet (scaling): X_j = ρ(s_j)·Z_j, Z Fréchet(α), ρ(s) = 1 + s → φ = ρ^α.
   We sample the utilities with numpy's own samplers, count winners, and measure the largest
   gap between the observed and the closed-form cumulative win probability along the score order
   (a Kolmogorov distance). The Dvoretzky–Kiefer–Wolfowitz inequality (Massart's constant, valid
   for discrete laws) bounds it: with M trials, sup|F̂ − F| ≤ √(log(2/α)/2M) with probability
   1 − α, so the worst set's distance has a 95% interval (Bonferroni over the sets). Controls score
   the same winners against a wrong link (the slope-matched rival link, a wrong exponent): they
   must be far off, or the test could not tell links apart.
2. **Thm 2.4 (large K).** For utilities outside the canonical families the top-1 law is only
   asymptotically the tail-weight law p_j ∝ F̄_{s_j}(b_n). Two examples with closed-form tail
   weights: a uniform shortfall X = 1 − (1 − s)·V, V ~ U(0, 1) (F̄_s(b) = (1 − b)/(1 − s) near the
   endpoint: the Weibit link with β = 1) and additive exponential noise U = s/τ + E
   (F̄_s(b) = e^{s/τ − b} above every s/τ: the softmax). Their winner laws must approach these as
   K grows and differ at K = 2.
3. **Prop. C.3.** For a non-affine T no τ̃ makes softmax(T(s)/τ̃) equal softmax(s/τ) on every
   candidate set. On sampled sets we bound min_τ̃ max_sets TV from both sides: branch and bound
   in θ = 1/τ̃ with the Lipschitz constant range(T)/4 of each set's TV (|dp_j/dθ| sums to the mean
   absolute deviation of T under p, at most half its range) and, beyond the grid, the monotone
   growth of the top candidate's softmax probability. An affine T is undone exactly (control).

Accuracy is controlled by sample sizes, not a step: M trials per set fix the DKW half-width
(reported with every estimate); the number of sampled sets only makes the C.3 bound a lower bound
on the supremum over all sets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from infonce_lab.simulation import estimates as est

CURVE_RATIOS = np.geomspace(0.1, 10.0, 41)  # τ̃/τ at which the C.3 figure draws the worst TV

Sampler = Callable[[np.ndarray, np.random.Generator, tuple[int, ...]], np.ndarray]


# ------------------------------------------------------------------------------- closed forms
def log_softmax_weight(s: np.ndarray, tau: float) -> np.ndarray:
    return s / tau


def log_weibit_weight(s: np.ndarray, beta: float) -> np.ndarray:
    """log (1 − s)^{−β}: Table 1's Weibull row with endpoint 1 and shortfall q(s) = 1 − s."""
    return -beta * np.log1p(-s)


def log_frechet_weight(s: np.ndarray, alpha: float) -> np.ndarray:
    """log ρ(s)^α with ρ(s) = 1 + s: Table 1's Fréchet row (the feature log(1 + s) of the
    Fréchet ablation)."""
    return alpha * np.log1p(s)


def link_probs(log_w: np.ndarray) -> np.ndarray:
    """p_j = φ_j/Σ_k φ_k over the last axis, from log φ."""
    z = log_w - log_w.max(-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(-1, keepdims=True)


# ----------------------------------------------------------------------------------- samplers
def gumbel_utilities(tau: float) -> Sampler:
    return lambda s, rng, size: s / tau + rng.gumbel(size=size)


def weibull_utilities(beta: float) -> Sampler:
    """X = b − q(s)·W with b = 1, q(s) = 1 − s and W ~ Weibull(β) (numpy's standard Weibull)."""
    return lambda s, rng, size: 1.0 - (1.0 - s) * rng.weibull(beta, size=size)


def frechet_utilities(alpha: float) -> Sampler:
    """X = ρ(s)·Z, ρ = 1 + s, Z = 1/W ~ Fréchet(α) (P(Z ≤ z) = exp(−z^{−α}) for W ~ Weibull(α))."""
    return lambda s, rng, size: (1.0 + s) / rng.weibull(alpha, size=size)


def uniform_shortfall_utilities() -> Sampler:
    """X = 1 − (1 − s)·V, V ~ U(0, 1): Weibull domain with index 1, not the Weibull model itself."""
    return lambda s, rng, size: 1.0 - (1.0 - s) * rng.random(size=size)


def exponential_noise_utilities(tau: float) -> Sampler:
    """U = s/τ + E, E ~ Exp(1): Gumbel domain, exactly exponential tail above every s/τ."""
    return lambda s, rng, size: s / tau + rng.standard_exponential(size=size)


# ----------------------------------------------------------------------------- Monte Carlo
def random_sets(rng: np.random.Generator, sets: int, k: int, low: float, high: float
                ) -> np.ndarray:
    """``sets`` candidate sets of ``k`` i.i.d. uniform scores on [low, high], each sorted
    ascending (the order of the cumulative win probability)."""
    return np.sort(rng.uniform(low, high, size=(sets, k)), axis=1)


def winner_counts(scores: np.ndarray, sampler: Sampler, trials: int, rng: np.random.Generator,
                  chunk_elems: int = 1 << 21) -> np.ndarray:
    """How often each candidate of each set has the largest sampled utility, over ``trials``
    independent draws per set; (S, K) integer counts. Chunked to bound memory."""
    n_sets, k = scores.shape
    counts = np.zeros(n_sets * k, dtype=np.int64)
    offset = np.arange(n_sets) * k
    per_chunk = max(1, chunk_elems // (n_sets * k))
    done = 0
    while done < trials:
        c = min(per_chunk, trials - done)
        u = sampler(scores[None], rng, (c, n_sets, k))
        win = u.argmax(-1) + offset[None]
        counts += np.bincount(win.ravel(), minlength=n_sets * k)
        done += c
    return counts.reshape(n_sets, k)


def dkw_halfwidth(trials: int, families: int = 1, level: float = est.LEVEL) -> float:
    """ε with P(sup|F̂ − F| > ε) ≤ (1 − level)/families for each of ``families`` empirical laws of
    ``trials`` draws (Massart 1990; it holds for discrete laws too)."""
    return math.sqrt(math.log(2 * families / (1 - level)) / (2 * trials))


def ks_distances(counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Per set, max_j |F̂(j) − F(j)| of the cumulative win probability along the score order."""
    emp = counts / counts.sum(-1, keepdims=True)
    return np.abs(np.cumsum(emp - probs, axis=-1)).max(-1)


def worst_set_distance(counts: np.ndarray, probs: np.ndarray) -> dict[str, Any]:
    """The largest Kolmogorov distance over the sets between the winners' law and a link, with
    a simultaneous 95% interval for the true worst distance: every set's true distance lies
    within ε of its empirical one (DKW, Bonferroni over the sets), and a maximum moves by at most
    the largest of its arguments' moves."""
    trials = int(counts.sum(-1).min())
    eps = dkw_halfwidth(trials, families=counts.shape[0])
    d = ks_distances(counts, probs)
    worst = float(d.max())
    return {**est.interval(worst, max(0.0, worst - eps), worst + eps,
                           f"DKW band (Massart), Bonferroni over {counts.shape[0]} sets", trials),
            "halfwidth": eps, "per_set": [float(x) for x in d]}


def table1_links(*, low: float, high: float, candidates: int, sets: int, trials: int,
                  tau: float, beta: float, alpha: float, wrong_exponent: float,
                  rng: np.random.Generator) -> dict[str, Any]:
    """Table 1's three rows: winners of each index model against its closed form and controls.

    Controls: the rival link matched in slope at s = 0 (softmax ↔ Weibit with 1/τ = β,
    Fréchet against the softmax with 1/τ = α, both links having slope 1/τ there), and the model's
    own link with its exponent multiplied by ``wrong_exponent``."""
    s = random_sets(rng, sets, candidates, low, high)
    rows = {
        "gumbel": (gumbel_utilities(tau), lambda e: log_softmax_weight(s, tau / e),
                   {"rival_weibit": log_weibit_weight(s, 1.0 / tau)}),
        "weibull": (weibull_utilities(beta), lambda e: log_weibit_weight(s, beta * e),
                    {"rival_softmax": log_softmax_weight(s, 1.0 / beta)}),
        "frechet": (frechet_utilities(alpha), lambda e: log_frechet_weight(s, alpha * e),
                    {"rival_softmax": log_softmax_weight(s, 1.0 / alpha)}),
    }
    out: dict[str, Any] = {}
    for name, (sampler, own, rivals) in rows.items():
        counts = winner_counts(s, sampler, trials, rng)
        controls = {"wrong_exponent": worst_set_distance(counts, link_probs(own(wrong_exponent)))}
        controls.update({k: worst_set_distance(counts, link_probs(v)) for k, v in rivals.items()})
        probs = link_probs(own(1.0))
        out[name] = {"match": worst_set_distance(counts, probs), "controls": controls,
                     "top_share": float(probs[:, -1].mean())}
    return out


def large_k_links(*, ks: Sequence[int], low: float, high: float, sets: int, trials: int, tau: float,
            rng: np.random.Generator) -> dict[str, Any]:
    """Thm 2.4: the winners' law against the tail-weight law, per candidate-set size K."""
    domains = {
        "weibull_domain": (uniform_shortfall_utilities(), lambda s: log_weibit_weight(s, 1.0),
                           "X = 1 − (1 − s)·V, V ~ U(0,1); tail weights ∝ (1 − s)^{−1}"),
        "gumbel_domain": (exponential_noise_utilities(tau), lambda s: log_softmax_weight(s, tau),
                          "U = s/τ + E, E ~ Exp(1); tail weights ∝ exp(s/τ)"),
    }
    out: dict[str, Any] = {}
    for name, (sampler, law, model) in domains.items():
        per_k = {}
        for k in ks:
            s = random_sets(rng, sets, k, low, high)
            per_k[str(k)] = worst_set_distance(winner_counts(s, sampler, trials, rng),
                                               link_probs(law(s)))
        out[name] = {"model": model, "K": [int(k) for k in ks], "distance": per_k}
    return out


# ---------------------------------------------------------------------------------- Prop. C.3
def worst_tv(theta: np.ndarray, t_vals: np.ndarray, target: np.ndarray,
             chunk_elems: int = 1 << 22) -> np.ndarray:
    """max over sets of TV(softmax(θ·T(s)), target), for every θ of a 1-D array."""
    theta = np.asarray(theta, dtype=np.float64)
    out = np.empty(theta.shape)
    per = max(1, chunk_elems // t_vals.size)
    for i in range(0, theta.size, per):
        th = theta[i:i + per]
        p = link_probs(th[:, None, None] * t_vals[None])
        out[i:i + per] = 0.5 * np.abs(p - target[None]).sum(-1).max(-1)
    return out


def mean_tv(theta: float, t_vals: np.ndarray, target: np.ndarray) -> float:
    return float(0.5 * np.abs(link_probs(theta * t_vals) - target).sum(-1).mean())


def certified_min_worst_tv(t_vals: np.ndarray, target: np.ndarray, theta_max: float,
                           grid: int = 256, gap: float = 1e-4, max_rounds: int = 60
                           ) -> dict[str, Any]:
    """Bounds on m = min_{θ ≥ 0} max_sets TV(softmax(θT), target), θ = 1/τ̃.

    Upper bound: the best θ evaluated. Lower bound: on a cell [a, b] the Lipschitz constant
    L = max range(T)/4 gives f ≥ (f(a) + f(b) − L(b − a))/2; cells that could still hold a value
    below the upper bound − ``gap`` are halved. Beyond θ_max, f(θ) ≥ max_sets (p_top(θ_max) −
    target_top) because the top candidate's probability grows with θ (T increasing in s); θ_max
    doubles until that bound clears the upper bound."""
    lip = float((t_vals.max(-1) - t_vals.min(-1)).max()) / 4.0

    def tail_bound(th: float) -> float:
        return float((link_probs(th * t_vals)[:, -1] - target[:, -1]).max())

    while True:
        edges = np.linspace(0.0, theta_max, grid + 1)
        f = worst_tv(edges, t_vals, target)
        ub_i = int(f.argmin())
        ub, th_best = float(f[ub_i]), float(edges[ub_i])
        tail = tail_bound(theta_max)
        if tail >= ub or theta_max > 1e6:
            break
        theta_max *= 2.0
    a, b, fa, fb = edges[:-1], edges[1:], f[:-1], f[1:]
    rounds = 0
    while True:
        lb = 0.5 * (fa + fb - lip * (b - a))
        live = lb < ub - gap
        if not live.any() or rounds >= max_rounds:
            break
        a, b, fa, fb = a[live], b[live], fa[live], fb[live]
        mid = 0.5 * (a + b)
        fm = worst_tv(mid, t_vals, target)
        if fm.min() < ub:
            ub, th_best = float(fm.min()), float(mid[fm.argmin()])
        a, b = np.r_[a, mid], np.r_[mid, b]
        fa, fb = np.r_[fa, fm], np.r_[fm, fb]
        rounds += 1
    lower = max(0.0, min(float(lb.min()), tail))
    return {"upper": ub, "lower": lower, "theta": th_best, "theta_max": theta_max,
            "lipschitz": lip, "rounds": rounds, "converged": bool(not live.any())}


def coordinate(name: str, s: np.ndarray, lam: float | None = None) -> np.ndarray:
    """The coordinates compared with the identity: the Weibit −log(1 − s); the WEINCE blend
    (1 − λ)s + λ(−log(1 − s)) (Eq. 3.1 with β̂ = 1/τ, the two logits matched in slope at s = 0);
    an affine 2s + 0.3 (the control: τ̃ = 2τ undoes it)."""
    if name == "weibit":
        return -np.log1p(-s)
    if name == "blend":
        assert lam is not None
        return (1.0 - lam) * s - lam * np.log1p(-s)
    if name == "affine":
        return 2.0 * s + 0.3
    raise ValueError(f"unknown coordinate {name!r}")


def coordinate_mismatch(*, low: float, high: float, candidates: int, sets: int,
                        taus: Sequence[float], lambdas: Sequence[float], gap: float,
                        rng: np.random.Generator) -> dict[str, Any]:
    """Prop. C.3 per (coordinate, τ): certified bounds on the best worst-set TV over τ̃."""
    s = random_sets(rng, sets, candidates, low, high)
    coords = [("weibit", None)] + [("blend", lam) for lam in lambdas] + [("affine", None)]
    cases: dict[str, Any] = {}
    for tau in taus:
        target = link_probs(s / tau)
        for name, lam in coords:
            t_vals = coordinate(name, s, lam)
            # T is matched in slope to s at 0 (affine: slope 2), so 1/τ̃ sits near 1/τ (2/τ);
            # the search starts 20 times wider and widens itself if needed.
            res = certified_min_worst_tv(t_vals, target, theta_max=40.0 / tau, gap=gap)
            key = f"{name}{'' if lam is None else f'_{lam:g}'}@tau={tau:g}"
            cases[key] = {
                "coordinate": name, "lambda": lam, "tau": float(tau), "control": name == "affine",
                "min_worst_tv": est.interval(
                    res["upper"], res["lower"], res["upper"],
                    "certified bound over τ̃ > 0 (branch and bound, Lipschitz in 1/τ̃)", sets),
                "tau_tilde": None if res["theta"] == 0 else 1.0 / res["theta"],
                "mean_tv_at_best": mean_tv(res["theta"], t_vals, target),
                "search": {k: res[k] for k in ("theta_max", "lipschitz", "rounds", "converged")},
                "curve": {"tau_tilde_over_tau": CURVE_RATIOS.tolist(),
                          "worst_tv": worst_tv(1.0 / (tau * CURVE_RATIOS), t_vals,
                                               target).tolist()},
            }
    return cases


def run_link_theory(*, score_low: float, score_high: float, plackett_luce: dict[str, Any],
                    large_k: dict[str, Any], mismatch: dict[str, Any], seed: int
                    ) -> dict[str, Any]:
    """The ``link_theory`` experiment: Table 1, Thm 2.4 and Prop. C.3 on one seeded stream."""
    rng = np.random.default_rng(seed)
    pl = table1_links(low=score_low, high=score_high, rng=rng, **plackett_luce)
    lk = large_k_links(low=score_low, high=score_high, rng=rng, **large_k)
    cm = coordinate_mismatch(low=score_low, high=score_high, rng=rng, **mismatch)
    return {"plackett_luce": pl, "large_k": lk, "coordinate_mismatch": cm,
            "accuracy": {
                "plackett_luce_halfwidth": dkw_halfwidth(plackett_luce["trials"],
                                                         plackett_luce["sets"]),
                "large_k_halfwidth": dkw_halfwidth(large_k["trials"], large_k["sets"]),
                "note": "Monte Carlo: the accuracy is set by the trials per set (the DKW "
                        "half-width above); there is no step size, so no half-step rerun. "
                        "Prop. C.3 is a certified bound over τ̃ on the sampled sets."}}
