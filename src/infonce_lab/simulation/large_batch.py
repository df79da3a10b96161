"""Large-batch limits of InfoNCE: Wang–Isola's Theorem 1 (essay §4) and the large-batch
consistency of the geometric-mechanics paper (its Thm 3.1, its gradient experiment and our value
check).

Wang–Isola is checked on a synthetic law with a closed-form limit: embeddings uniform on S^{d−1}
(a perfectly uniform encoder) and positives y ~ vMF(x, κ_pos). Then
    lim_M [L(M) − log M] = −(1/τ)·A_d(κ_pos) + log M_d(1/τ),
with A_d(κ) = I_{d/2}(κ)/I_{d/2−1}(κ) (E[xᵀy]) and M_d(k) = E_{w∼σ} e^{k·wᵀu} =
Γ(d/2)(k/2)^{1−d/2}I_{d/2−1}(k). For a uniform law this equals L_align(α=2)/(2τ) +
L_uniform(t=1/(2τ)) of the essay's §3, which is cross-checked with the project's own estimators.

The gradient experiment and our value check follow the published setup (Gaussian mixture in
ℝ^64, linear encoder 128×64) with torch autograd in float64 for the gradients.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from scipy import special, stats

from infonce_lab.losses.geometry import alignment, uniformity
from infonce_lab.simulation import estimates as est

# ----------------------------------------------------------------------------------------------
# Closed forms on S^{d−1}


def log_bessel_i(nu: float, x: np.ndarray | float) -> np.ndarray:
    """log I_ν(x) through the exponentially scaled ive, stable for the large x = 1/τ used here."""
    return np.log(special.ive(nu, x)) + x


def log_mgf_uniform(k: np.ndarray | float, d: int) -> np.ndarray:
    """log E_{w∼σ_{d−1}} exp(k·wᵀu) = log[Γ(d/2)(k/2)^{1−d/2} I_{d/2−1}(k)], k > 0."""
    k = np.asarray(k, np.float64)
    return special.gammaln(d / 2) + (1 - d / 2) * np.log(k / 2) + log_bessel_i(d / 2 - 1, k)


def mean_resultant(kappa: float, d: int) -> float:
    """A_d(κ) = E[μᵀy] for y ~ vMF(μ, κ) on S^{d−1}."""
    return float(special.ive(d / 2, kappa) / special.ive(d / 2 - 1, kappa))


def log_vmf_volume(tau: float, d: int) -> float:
    """log V_κ(τ) = log ∫_{S^{d−1}} exp(zᵀw/τ) dμ(w), μ the unnormalised surface measure (the
    geometry paper's kernel volume): V = (2π)^{d/2} τ^{d/2−1} I_{d/2−1}(1/τ), in log form
    (I_ν(1/τ) overflows for small τ)."""
    return float(
        (d / 2) * math.log(2 * math.pi) + (d / 2 - 1) * math.log(tau) + log_bessel_i(d / 2 - 1, 1 / tau)
    )


def sample_uniform_cosine(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """wᵀu for w uniform on S^{d−1} and any fixed u: (t+1)/2 ~ Beta((d−1)/2, (d−1)/2).

    The negatives enter the loss only through this cosine, so drawing it directly is exact and
    avoids materialising M × d vectors per anchor.
    """
    a = (d - 1) / 2
    return 2.0 * rng.beta(a, a, size=shape) - 1.0


def sample_vmf_pairs(
    rng: np.random.Generator, n: int, d: int, kappa: float
) -> tuple[np.ndarray, np.ndarray]:
    """x uniform on S^{d−1} and y ~ vMF(x, κ): y is drawn around e₁ and carried to x by the
    reflection that swaps e₁ and x (vectorised over the n pairs)."""
    x = rng.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    e1 = np.eye(d)[0]
    y0 = stats.vonmises_fisher(e1, kappa).rvs(n, random_state=rng)
    u = e1[None, :] - x
    uu = np.maximum((u * u).sum(1, keepdims=True), 1e-300)
    y = y0 - 2 * u * (y0 * u).sum(1, keepdims=True) / uu
    return x, y


# ----------------------------------------------------------------------------------------------
# Wang–Isola Theorem 1


def wang_isola_limit(d: int, tau: float, kappa_pos: float) -> dict[str, float]:
    """The M → ∞ limit of L(M) − log M for the uniform + vMF law, term by term."""
    align_term = -mean_resultant(kappa_pos, d) / tau
    unif_term = float(log_mgf_uniform(1 / tau, d))
    return {"alignment_term": align_term, "uniformity_term": unif_term,
            "limit": align_term + unif_term}


def wang_isola_gap(
    d: int = 16,
    tau: float = 0.5,
    kappa_pos: float = 10.0,
    ms: Sequence[int] = tuple(2**k for k in range(2, 13)),
    anchors: int = 1000,
    check_pairs: int = 16384,
    check_chunks: int = 16,
    replicates: int = 10,
    seed: int = 0,
) -> dict:
    """L(M) − log M − limit against M, by Monte Carlo over ``anchors`` (x, y, negatives) draws.

    Per anchor, δ_M = log(e^{t⁺/τ}/M + mean_i e^{t_i/τ}) − log M_d(1/τ) (the −t⁺/τ alignment part is
    the same in L(M) and in the limit). Two things are measured:
    - the gap of the expectation, E[δ_M] = L(M) − log M − limit: estimated with the control variate
      S_M/Z − 1 (mean exactly 0), which removes the O(M^{−1/2}) noise so that the O(1/M) bias stays
      resolvable at large M; compared with its leading term c₁/M (positive in the denominator +
      Jensen), c₁ = E[e^{t⁺/τ}]/Z − Var(e^{t/τ})/(2Z²);
    - the spread of one anchor's loss around it, SD(δ_M) (and RMS(δ_M), which adds the bias),
      which is what decays as M^{−1/2}.

    For intervals the anchors are split into ``replicates`` independent groups (seeds of the
    Monte Carlo): each group's gap at the largest M and its log–log slopes over the upper half
    of M, t over the groups. The closed-form limit against the project's estimators: alignment
    over all ``check_pairs``, uniformity (all pairs within a set, so quadratic) over
    ``check_chunks`` chunks of them.
    """
    rng = np.random.default_rng(seed)
    k = 1 / tau
    lim = wang_isola_limit(d, tau, kappa_pos)
    log_z = lim["uniformity_term"]
    e1 = np.eye(d)[0]
    vmf = stats.vonmises_fisher(e1, kappa_pos)
    # Leading-order bias coefficient from closed forms (vMF moments are ratios of M_d).
    log_e_pos = log_mgf_uniform(kappa_pos + k, d) - log_mgf_uniform(kappa_pos, d)
    var_ratio = math.exp(log_mgf_uniform(2 * k, d) - 2 * log_z) - 1
    c1 = math.exp(log_e_pos - log_z) - 0.5 * var_ratio
    gap, gap_se, rms, sd = [], [], [], []
    groups = np.arange(anchors) % replicates
    gap_g, sd_g = np.zeros((replicates, len(ms))), np.zeros((replicates, len(ms)))
    for j, m in enumerate(ms):
        t_pos = vmf.rvs(anchors, random_state=rng)[:, 0]
        t_neg = sample_uniform_cosine(rng, (anchors, m), d)
        log_s = special.logsumexp(k * t_neg, axis=1) - math.log(m)  # log mean_i e^{t_i/τ}
        delta = np.logaddexp(k * t_pos - math.log(m), log_s) - log_z
        cv = delta - np.expm1(log_s - log_z)  # E[S_M/Z − 1] = 0 exactly
        gap.append(float(cv.mean()))
        gap_se.append(float(cv.std(ddof=1) / math.sqrt(anchors)))
        rms.append(float(np.sqrt(np.mean(delta**2))))
        sd.append(float(delta.std(ddof=1)))
        for g in range(replicates):
            gap_g[g, j] = cv[groups == g].mean()
            sd_g[g, j] = delta[groups == g].std(ddof=1)
    ms_arr = np.asarray(ms, np.float64)
    gap_arr, sd_arr = np.asarray(gap), np.asarray(sd)
    # Cross-check of the closed-form limit with the project's alignment/uniformity estimators.
    x, y = sample_vmf_pairs(rng, check_pairs, d, kappa_pos)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    # alignment is a mean over pairs: on all of them, with its per-pair standard error;
    # uniformity is quadratic in the sample: on ``check_chunks`` chunks, t over the chunks
    per_pair = ((xt - yt) ** 2).sum(1).numpy() / (2 * tau)
    align_t = est.mean_t(per_pair.tolist())
    assert align_t is not None and abs(align_t.mean - float(alignment(xt, yt, 2.0)) / (2 * tau)) < 1e-9
    unif_t = est.mean_t([float(uniformity(a, 1 / (2 * tau))) for a in xt.chunk(check_chunks)])
    check = est.welch([align_t, unif_t], [1.0, 1.0])  # independent: different statistics' noise
    sample_limit = check.mean
    upper = slice(len(ms) // 2, None)
    slopes_gap = [est.log_log_slope(ms_arr[upper], np.abs(gap_g[g, upper]))
                  for g in range(replicates)]
    slopes_sd = [est.log_log_slope(ms_arr[upper], sd_g[g, upper]) for g in range(replicates)]
    return {
        "d": d, "tau": tau, "kappa_pos": kappa_pos, "anchors": anchors,
        "m": list(ms), **lim,
        "limit_from_align_uniform_sample": sample_limit,
        "gap_of_expectation": gap, "gap_se": gap_se,
        "gap_theory_leading": [c1 / m for m in ms], "c1": c1,
        "rms_per_anchor": rms, "sd_per_anchor": sd,
        "slope_gap_of_expectation": est.log_log_slope(ms_arr, np.abs(gap_arr)),
        "slope_gap_of_expectation_upper_half": est.log_log_slope(ms_arr[upper],
                                                                 np.abs(gap_arr[upper])),
        "slope_sd_per_anchor": est.log_log_slope(ms_arr, sd_arr),
        "slope_sd_per_anchor_upper_half": est.log_log_slope(ms_arr[upper], sd_arr[upper]),
        "replicates": replicates,
        "estimates": {
            "gap_at_max_m": est.from_t(est.mean_t(gap_g[:, -1].tolist()),
                                       "t over Monte-Carlo replicates"),
            "slope_gap_of_expectation": _t_or_missing(slopes_gap, "per-replicate slope of "
                                                      "log|gap| on log M (upper half of M)"),
            "slope_sd_per_anchor": _t_or_missing(slopes_sd, "per-replicate slope of log SD on "
                                                 "log M (upper half of M)"),
            "limit_check": est.from_t(
                est.shifted(check, lim["limit"]),
                "alignment: t over the check pairs; uniformity: t over chunks of them "
                "(Welch–Satterthwaite)"),
        },
    }


def _t_or_missing(values: Sequence[float], method: str) -> dict:
    """t over replicates of a per-replicate statistic; undefined when some replicate has none
    (a log–log slope through a value ≤ 0)."""
    if not all(math.isfinite(v) for v in values):
        return est.missing("a replicate's values are not all positive: no log–log slope", method)
    return est.from_t(est.mean_t(list(values)), method)


# ----------------------------------------------------------------------------------------------
# The geometry paper's gradient experiment and our value check: Gaussian mixture, linear encoder,
# cosine and RBF critics


@dataclass(frozen=True)
class Critic:
    """cosine: z = Wx/‖Wx‖, s = zᵀw; rbf: z = tanh(Wx), s = −‖z − w‖²/dim_out (the paper's)."""

    name: str
    tau: float
    aug_noise: float


COSINE = Critic("cosine", tau=0.1, aug_noise=0.05)
RBF = Critic("rbf", tau=1.0, aug_noise=0.2)
CRITICS = {"cosine": COSINE, "rbf": RBF}


@dataclass(frozen=True)
class MixtureTask:
    """One seed's draw: mixture means, encoder W, anchors, positives and negative pools."""

    means: torch.Tensor
    sigma: float
    w: torch.Tensor
    x: torch.Tensor
    x_pos: torch.Tensor
    negatives: torch.Tensor


def _mixture(gen: torch.Generator, n: int, means: torch.Tensor, sigma: float) -> torch.Tensor:
    comp = torch.randint(means.shape[0], (n,), generator=gen)
    return means[comp] + sigma * torch.randn(n, means.shape[1], generator=gen, dtype=means.dtype)


def make_task(
    seed: int, critic: Critic, batch: int = 64, n_neg: int = 4096, dim_in: int = 64,
    dim_out: int = 128, components: int = 4, radius: float = 4.0, sigma: float = 1.0,
    dtype: torch.dtype = torch.float64,
) -> MixtureTask:
    """The gradient experiment's data: means = random unit vectors × 4, σ = 1; W ~ N(0, 1/dim_in).

    Drawn in float64 and then cast, so a seed gives the same task in either precision.
    """
    gen = torch.Generator().manual_seed(seed)
    dt = torch.float64
    means = F.normalize(torch.randn(components, dim_in, generator=gen, dtype=dt), dim=1) * radius
    x = _mixture(gen, batch, means, sigma)
    x_pos = x + critic.aug_noise * torch.randn(x.shape, generator=gen, dtype=dt)
    negatives = _mixture(gen, n_neg, means, sigma)
    w = torch.randn(dim_out, dim_in, generator=gen, dtype=dt) / math.sqrt(dim_in)
    w, x, x_pos, negatives = (t.to(dtype) for t in (w, x, x_pos, negatives))
    return MixtureTask(means.to(dtype), sigma, w, x, x_pos, negatives)


def fresh_negatives(task: MixtureTask, n: int, seed: int) -> torch.Tensor:
    """n new draws from the same mixture as ``task`` (independent of its negative pool)."""
    means = task.means.double()
    draws = _mixture(torch.Generator().manual_seed(seed), n, means, task.sigma)
    return draws.to(task.means.dtype)


def encode(w: torch.Tensor, x: torch.Tensor, critic: Critic) -> torch.Tensor:
    h = x @ w.T
    return F.normalize(h, dim=1) if critic.name == "cosine" else torch.tanh(h)


def scores(z: torch.Tensor, v: torch.Tensor, critic: Critic) -> torch.Tensor:
    """All-pairs critic s(z_b, v_n): (B, N)."""
    if critic.name == "cosine":
        return z @ v.T
    sq = (z * z).sum(1, keepdim=True) - 2 * z @ v.T + (v * v).sum(1)[None, :]
    return -sq / z.shape[1]


def positive_scores(z: torch.Tensor, zp: torch.Tensor, critic: Critic) -> torch.Tensor:
    return (z * zp).sum(1) if critic.name == "cosine" else -((z - zp) ** 2).sum(1) / z.shape[1]


def nce_loss(w: torch.Tensor, task: MixtureTask, n: int, critic: Critic) -> torch.Tensor:
    """Mean over anchors of −s⁺/τ + logsumexp over [positive, first n negatives] (the paper's)."""
    z, zp = encode(w, task.x, critic), encode(w, task.x_pos, critic)
    s_pos = positive_scores(z, zp, critic) / critic.tau
    s_neg = scores(z, encode(w, task.negatives[:n], critic), critic) / critic.tau
    return (torch.logsumexp(torch.cat([s_pos[:, None], s_neg], dim=1), dim=1) - s_pos).mean()


def _grad(task: MixtureTask, n: int, critic: Critic) -> torch.Tensor:
    w = task.w.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(nce_loss(w, task, n, critic), w)
    return g.flatten()


def grad_consistency(
    critic: Critic | str = "cosine",
    ns: Sequence[int] = tuple(2**k for k in range(2, 11)),
    seeds: int = 20,
    n_ref: int = 4096,
    batch: int = 64,
) -> dict:
    """cos(g_N, g_ref) and ‖g_N − g_ref‖/‖g_ref‖ w.r.t. W, mean ± std over seeds (the paper's).

    g_ref uses a pool of n_ref negatives; g_N the first N rows of an independent pool of fresh
    draws from the same mixture. (The published check takes g_N from the reference's own pool,
    which converges to g_ref by construction whatever the limit is; independent pools make the
    error the Monte-Carlo error of both, so a g_N that settled elsewhere would show.)
    """
    critic = CRITICS[critic] if isinstance(critic, str) else critic
    cos, rel, ratio = (np.zeros((seeds, len(ns))) for _ in range(3))
    for s in range(seeds):
        task = make_task(s, critic, batch=batch, n_neg=n_ref)
        g_ref = _grad(task, n_ref, critic)
        own = replace(task, negatives=fresh_negatives(task, max(ns), seed=30_000 + s))
        g = torch.stack([_grad(own, n, critic) for n in ns])
        cos[s] = F.cosine_similarity(g, g_ref[None], dim=1).numpy()
        rel[s] = ((g - g_ref).norm(dim=1) / g_ref.norm()).numpy()
        ratio[s] = (g.norm(dim=1) / g_ref.norm()).numpy()
    return {
        "critic": critic.name, "tau": critic.tau, "n": list(ns), "n_ref": n_ref, "seeds": seeds,
        "reference": "independent pool",
        "cos_mean": cos.mean(0).tolist(), "cos_std": cos.std(0, ddof=1).tolist(),
        "rel_err_mean": rel.mean(0).tolist(), "rel_err_std": rel.std(0, ddof=1).tolist(),
        "slope_rel_err": est.log_log_slope(np.asarray(ns, np.float64), rel.mean(0)),
        # ‖g_N‖/‖g_ref‖ separates a scale mismatch from a direction error: with the positive in
        # the denominator the gradient grows with N until N·Γ(z) ≫ e^{s⁺/τ}.
        "norm_ratio_mean": ratio.mean(0).tolist(), "norm_ratio_std": ratio.std(0, ddof=1).tolist(),
        "estimates": {
            "slope_one_minus_cos": _t_or_missing(
                [est.log_log_slope(ns, 1 - cos[s]) for s in range(seeds)],
                "per-seed slope of log(1 − cos) on log N, t over seeds"),
            "slope_rel_err": _t_or_missing(
                [est.log_log_slope(ns, rel[s]) for s in range(seeds)],
                "per-seed slope of log relative error on log N, t over seeds"),
            "cos_at_max_n": est.from_t(est.mean_t(cos[:, -1].tolist()), "t over seeds"),
            "rel_err_at_max_n": est.from_t(est.mean_t(rel[:, -1].tolist()), "t over seeds"),
        },
    }


@torch.no_grad()
def value_gap(
    critic: Critic | str = "cosine",
    ns: Sequence[int] = tuple(2**k for k in range(2, 13)),
    seeds: int = 20,
    n_ref: int = 2**16,
    batch: int = 64,
    dtype: torch.dtype = torch.float32,
    bootstrap: int = 2000,
) -> dict:
    """Our value check of Thm 3.1: gap(N) = [L_NCE(N) − log N − log V] − Ĵ_τ, Ĵ_τ from n_ref fresh
    negatives. log V and the −s⁺/τ term appear on both sides and cancel, so the gap needs no V;
    V (vMF formula, cosine only) is used to report Ĵ_τ itself. Both the published loss (positive in
    the denominator, O(1/N) bias e^{s⁺/τ}/(NΓ)) and the decoupled one (negatives only) are run.
    float32 by default: encoding the 2^16 reference draws is the cost, and the smallest gaps
    (~1e-3) are far above float32 log-sum-exp rounding.
    """
    critic = CRITICS[critic] if isinstance(critic, str) else critic
    n_max = max(ns)
    gaps = {"with_positive": np.zeros((seeds, len(ns))), "decoupled": np.zeros((seeds, len(ns)))}
    j_hat, pos_over_gamma = [], []
    for s in range(seeds):
        task = make_task(s, critic, batch=batch, n_neg=n_max, dtype=dtype)
        ref = fresh_negatives(task, n_ref, seed=10_000 + s)
        z, zp = encode(task.w, task.x, critic), encode(task.w, task.x_pos, critic)
        s_pos = positive_scores(z, zp, critic) / critic.tau
        s_neg = scores(z, encode(task.w, task.negatives, critic), critic) / critic.tau
        log_gamma = torch.logsumexp(
            scores(z, encode(task.w, ref, critic), critic) / critic.tau, dim=1
        ) - math.log(n_ref)  # log of (1/N_ref)Σ_w κ_τ(z, w), the partition field Γ(z)
        for k, n in enumerate(ns):
            lse_neg = torch.logsumexp(s_neg[:, :n], dim=1)
            lse_pos = torch.logaddexp(lse_neg, s_pos)
            gaps["with_positive"][s, k] = float((lse_pos - math.log(n) - log_gamma).mean())
            gaps["decoupled"][s, k] = float((lse_neg - math.log(n) - log_gamma).mean())
        pos_over_gamma.append(float((s_pos - log_gamma).exp().median()))
        if critic.name == "cosine":
            d = z.shape[1]
            j_hat.append(float(-s_pos.mean() + log_gamma.mean()) - log_vmf_volume(critic.tau, d))
    n_arr = np.asarray(ns, np.float64)
    out: dict = {"critic": critic.name, "tau": critic.tau, "n": list(ns), "n_ref": n_ref,
                 "seeds": seeds, "median_e_pos_over_gamma": pos_over_gamma}
    if j_hat:
        out["j_hat"] = j_hat
        out["log_v"] = log_vmf_volume(critic.tau, z.shape[1])
    upper = slice(len(ns) // 2, None)
    for key, g in gaps.items():
        out[key] = {
            "gap_mean": g.mean(0).tolist(), "gap_std": g.std(0, ddof=1).tolist(),
            "abs_gap_mean": np.abs(g).mean(0).tolist(),
            "rms_gap": np.sqrt((g**2).mean(0)).tolist(),
            "slope_abs_gap": est.log_log_slope(n_arr, np.abs(g).mean(0)),
            "slope_abs_gap_upper_half": est.log_log_slope(n_arr[upper], np.abs(g).mean(0)[upper]),
            "estimates": {
                # the gap's size over seeds, sign and all: its mean square is bias² + variance
                "slope_rms_gap": _rms_slope_bootstrap(g[:, upper], n_arr[upper], bootstrap,
                                                      seed=20_000 + len(key)),
                "gap_at_max_n": est.from_t(est.mean_t(g[:, -1].tolist()), "t over seeds"),
            },
        }
    return out


def _rms_slope_bootstrap(g: np.ndarray, n: np.ndarray, replicates: int, seed: int) -> dict:
    """Slope of log RMS-over-seeds gap on log N (g: seeds × N), with a percentile interval from
    resampling the seeds (all replicates at once)."""
    method = (f"slope of log RMS-over-seeds gap on log N (upper half of N); percentile "
              f"bootstrap over seeds ({replicates})")
    point = est.log_log_slope(n, np.sqrt((g**2).mean(0)))
    if not math.isfinite(point):
        return est.missing("a zero RMS gap: no log–log slope", method)
    idx = np.random.default_rng(seed).integers(0, g.shape[0], (replicates, g.shape[0]))
    rms = np.sqrt((g[idx] ** 2).mean(1))  # (B, N)
    slopes = np.polyfit(np.log(n), np.log(np.maximum(rms, 1e-300)).T, 1)[0]
    lo, hi = np.quantile(slopes, [0.025, 0.975])
    return est.interval(point, lo, hi, method, g.shape[0])


def run_large_batch(
    *,
    grad_seeds: int, value_seeds: int, wi_taus: Sequence[float],
    wi_replicates: int,
) -> dict:
    """Every large-N experiment at default (CPU) sizes."""
    return {
        "wang_isola": [wang_isola_gap(tau=t, replicates=wi_replicates) for t in wi_taus],
        "grad_consistency": [grad_consistency(c, seeds=grad_seeds) for c in ("cosine", "rbf")],
        "value_gap": [value_gap(c, seeds=value_seeds) for c in ("cosine", "rbf")],
    }
