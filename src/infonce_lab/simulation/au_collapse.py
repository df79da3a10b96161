"""Wang–Isola's alignment-only collapse (the essay's §3.1: "minimizing alignment alone produces
catastrophic representation collapse"; §3.2 and its summary: uniformity prevents it), by
gradient descent on a small encoder.

The setting is the paper's, shrunk: an encoder f = normalise(MLP) onto S^{d−1} (one hidden ReLU
layer, biases), trained on positive pairs that are two augmented views x + σ_aug·ε of one point
of a Gaussian mixture (``clusters`` centres of norm ``radius`` in ℝ^{dim_in}, within-cluster SD
``cluster_sd``), fresh minibatches every step, by one of three objectives from the same initial
weights on the same batches (paired over seeds):

- ``align``: L_align(f; α) alone;
- ``align_uniform``: L_align + λ·½[L_uniform(f(x₁); t) + L_uniform(f(x₂); t)] (the official
  STL-10 example's loss, α = t = 2, λ = 1);
- ``infonce``: InfoNCE over the batch (negatives scored against f(y), F.1), the control.

A free embedding per point would not do: alignment alone is then minimised by any configuration
with f(x) = f(y) pair by pair, and nothing ties the pairs together. The collapse the essay
describes needs an encoder that is continuous in its input and views whose laws overlap.

Every (method, seed) run is one slice of batched parameters with one Adam (elementwise, so the
batched runs are exactly the independent ones), as in :mod:`population`. The convergence check is
twice the steps, read off one continued run (the first S steps of a 2S-step run are the S-step
run): collapse is approached, not reached, so the check asks whether what the verdict reads at S
steps still holds at 2S. Measured on ``n_eval`` fresh points (the same ones for every method of a
seed): the spread (mean distance over distinct pairs), its share of the uniform law's on S^{d−1}
(closed form), L_uniform(t) and L_align(α) on two fresh views. A collapsed encoder f(x) = c has
spread 0 and L_uniform = 0 (its maximum); the uniform law has the closed forms below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from scipy import special

from infonce_lab.simulation import estimates as est

METHODS = ("align", "align_uniform", "infonce")


# ----------------------------------------------------------------------------------------------
# Closed forms on S^{d−1}


def uniform_spread(d: int) -> float:
    """E‖u − v‖ for u, v independent and uniform on S^{d−1}: 2^{d−1}Γ(d/2)²/(√π·Γ(d − ½))
    (4/π on S¹, 4/3 on S², → √2 as d grows)."""
    return math.exp((d - 1) * math.log(2) + 2 * special.gammaln(d / 2)
                    - 0.5 * math.log(math.pi) - special.gammaln(d - 0.5))


def uniform_uniformity(d: int, t: float) -> float:
    """L_uniform(σ_{d−1}; t) = log E e^{−t‖u−v‖²} = −2t + log E e^{2t·uᵀv}, with
    E e^{k·uᵀv} = Γ(d/2)(k/2)^{1−d/2}I_{d/2−1}(k) (on S¹: −2t + log I₀(2t))."""
    k = 2 * t
    log_mgf = (special.gammaln(d / 2) + (1 - d / 2) * math.log(k / 2)
               + math.log(special.ive(d / 2 - 1, k)) + k)
    return -2 * t + float(log_mgf)


# ----------------------------------------------------------------------------------------------
# Batched estimators (runs × points × d); each matches :mod:`infonce_lab.losses.geometry` per run


def batched_uniformity(z: torch.Tensor, t: float) -> torch.Tensor:
    """log of the mean over distinct pairs of exp(−t‖z_i − z_j‖²), per run, for unit rows: on
    the sphere ‖z_i − z_j‖² = 2 − 2z_iᵀz_j, and the mean over i ≠ j equals the one over i < j."""
    n = z.shape[-2]
    logits = (2 * t) * (z @ z.transpose(-1, -2)) - 2 * t
    logits = logits.masked_fill(torch.eye(n, dtype=torch.bool), float("-inf"))
    return torch.logsumexp(logits.flatten(-2), -1) - math.log(n * (n - 1))


def batched_alignment(z1: torch.Tensor, z2: torch.Tensor, alpha: float) -> torch.Tensor:
    """Mean over pairs of ‖z1_i − z2_i‖^α, per run (α = 2: the squared distance, smooth at 0)."""
    sq = (z1 - z2).pow(2).sum(-1)
    return (sq if alpha == 2 else sq.clamp_min(1e-12).pow(alpha / 2)).mean(-1)


def batched_infonce(z1: torch.Tensor, z2: torch.Tensor, tau: float) -> torch.Tensor:
    """Mean over anchors y_i of −log softmax_j(f(x_j)ᵀf(y_i)/τ)[i], per run: the positive x_i
    and the batch's other x_j as negatives, scored against f(y) (F.1)."""
    logits = z2 @ z1.transpose(-1, -2) / tau
    return (torch.logsumexp(logits, -1) - logits.diagonal(dim1=-2, dim2=-1)).mean(-1)


def spread(z: torch.Tensor) -> torch.Tensor:
    """Mean distance over distinct pairs, per run, in float64 and without the Gram shortcut (which
    cancels to ~1e-4 in float32 exactly where collapse is measured)."""
    z = z.double().reshape(-1, *z.shape[-2:])
    n = z.shape[-2]
    sums = [torch.cdist(r, r, compute_mode="donot_use_mm_for_euclid_dist").sum() for r in z]
    return (torch.stack(sums) / (n * (n - 1))).reshape(z.shape[:-2])


# ----------------------------------------------------------------------------------------------
# The experiment


def _mixture(gen: torch.Generator, centres: torch.Tensor, n: int, cluster_sd: float
             ) -> torch.Tensor:
    """n draws per seed from each seed's mixture (centres: seeds × K × dim_in)."""
    s, k, d = centres.shape
    comp = torch.randint(k, (s, n), generator=gen)
    means = torch.gather(centres, 1, comp[..., None].expand(s, n, d))
    return means + cluster_sd * torch.randn(s, n, d, generator=gen)


def train(
    *, seeds: int, steps: Sequence[int], batch: int, lr: float, optimizer: str, dim_in: int,
    hidden: int, dim_out: int, clusters: int, radius: float, cluster_sd: float, aug_sd: float,
    uniform_weight: float, alpha: float, t: float, tau: float, n_eval: int, seed: int,
) -> list[dict[str, dict[str, np.ndarray]]]:
    """Every method × seed trained at once; after each of ``steps`` (ascending, one continued
    run) the evaluation metrics, {metric: {method: per-seed array}}. No defaults here: they are
    the params schema's (``simulation.au_collapse``)."""
    marks = sorted({int(s) for s in steps})
    if not marks or marks[0] < 1:
        raise ValueError(f"steps must be positive step counts, got {list(steps)}")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer {optimizer!r}: expected 'adam' or 'sgd'")
    m = len(METHODS)
    gen = torch.Generator().manual_seed(seed)
    centres = F.normalize(torch.randn(seeds, clusters, dim_in, generator=gen), dim=-1) * radius
    init = (torch.randn(seeds, hidden, dim_in, generator=gen) / math.sqrt(dim_in),
            torch.zeros(seeds, 1, hidden),
            torch.randn(seeds, dim_out, hidden, generator=gen) / math.sqrt(hidden),
            torch.zeros(seeds, 1, dim_out))
    # run r = method·seeds + seed: every method starts from its seed's weights
    params = [p.repeat(m, 1, 1).requires_grad_(True) for p in init]
    opt = (torch.optim.Adam(params, lr=lr) if optimizer == "adam"
           else torch.optim.SGD(params, lr=lr, momentum=0.9))

    def encode(x: torch.Tensor) -> torch.Tensor:  # x: runs × n × dim_in
        w1, b1, w2, b2 = params
        h = torch.relu(torch.baddbmm(b1, x, w1.transpose(1, 2)))
        return F.normalize(torch.baddbmm(b2, h, w2.transpose(1, 2)), dim=-1)

    def views(g: torch.Generator, n: int) -> tuple[torch.Tensor, ...]:
        x = _mixture(g, centres, n, cluster_sd)
        x1 = x + aug_sd * torch.randn(x.shape, generator=g)
        x2 = x + aug_sd * torch.randn(x.shape, generator=g)
        return tuple(v.repeat(m, 1, 1) for v in (x, x1, x2))

    # the evaluation points: fresh draws, the same for every method of a seed
    x_eval, v1_eval, v2_eval = views(torch.Generator().manual_seed(seed + 1), n_eval)
    a, u, c = (slice(i * seeds, (i + 1) * seeds) for i in range(m))  # the methods' runs
    out = []
    for k in range(1, marks[-1] + 1):
        _, x1, x2 = views(gen, batch)
        z1, z2 = encode(x1), encode(x2)
        align = batched_alignment(z1[a.start:u.stop], z2[a.start:u.stop], alpha)
        unif = 0.5 * (batched_uniformity(z1[u], t) + batched_uniformity(z2[u], t))
        # summing the runs' objectives gives each run exactly its own gradient
        loss = align.sum() + uniform_weight * unif.sum() + batched_infonce(z1[c], z2[c], tau).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if k in marks:
            with torch.no_grad():
                z, za, zb = encode(x_eval), encode(v1_eval), encode(v2_eval)
                metrics = {"spread": spread(z),
                           "uniformity": batched_uniformity(z.double(), t),
                           "alignment": batched_alignment(za.double(), zb.double(), alpha)}
            out.append({name: {meth: v[i * seeds:(i + 1) * seeds].numpy().astype(np.float64)
                               for i, meth in enumerate(METHODS)}
                        for name, v in metrics.items()})
    return out


def run_au_collapse(
    *, seeds: int, steps: int, batch: int, lr: float, optimizer: str, dim_in: int, hidden: int,
    dim_out: int, clusters: int, radius: float, cluster_sd: float, aug_sd: float,
    uniform_weight: float, alpha: float, t: float, tau: float, n_eval: int, seed: int,
) -> dict[str, Any]:
    """Alignment alone, alignment + λ·uniformity and InfoNCE from the same initial encoders, after
    ``steps`` and after twice the steps (``{"step": …, "half_step": …}``, ``half_step`` being the
    doubled-steps run, as the report's ``converged`` pairs read them).

    Per method: every seed's spread, spread share (spread over the uniform law's), L_uniform and
    L_align, and each as an estimate (t over seeds). The closed-form references: the collapsed
    encoder (spread 0, L_uniform 0) and the uniform law on S^{dim_out − 1}. Nothing here decides a
    verdict: the report's rule does. Every argument is a field of the params schema's
    ``simulation.au_collapse``, its defaults there and not here.
    """
    snaps = train(seeds=seeds, steps=(steps, 2 * steps), batch=batch, lr=lr, optimizer=optimizer,
                  dim_in=dim_in, hidden=hidden, dim_out=dim_out, clusters=clusters, radius=radius,
                  cluster_sd=cluster_sd, aug_sd=aug_sd, uniform_weight=uniform_weight,
                  alpha=alpha, t=t, tau=tau, n_eval=n_eval, seed=seed)
    ref_spread = uniform_spread(dim_out)
    by_method: dict[str, dict[str, Any]] = {}
    for meth in METHODS:
        per = {name: [snap[name][meth] for snap in snaps] for name in snaps[0]}
        per["spread_share"] = [s / ref_spread for s in per["spread"]]
        by_method[meth] = {
            **{f"{name}_per_seed": est.step_pair(*(v.tolist() for v in values))
               for name, values in per.items()},
            "estimates": {name: est.step_pair(*(est.from_t(est.mean_t(v.tolist()), "t over seeds")
                                                for v in values))
                          for name, values in per.items()},
        }
    return {
        "methods": list(METHODS), "seeds": seeds, "dim_out": dim_out, "n_eval": n_eval,
        "alpha": alpha, "t": t, "uniform_weight": uniform_weight, "tau": tau,
        "optimizer": optimizer, "lr": lr, "batch": batch,
        "convergence": {"steps": steps, "steps_doubled": 2 * steps, "continued": True},
        "reference": {"collapsed": {"spread": 0.0, "uniformity": 0.0},
                      "uniform": {"spread": ref_spread,
                                  "uniformity": uniform_uniformity(dim_out, t)}},
        "by_method": by_method,
    }
