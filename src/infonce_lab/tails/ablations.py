"""The link test's ablations (SPECS B.6, B.7): does a heavy-tailed (Fréchet) component help, and
how do λ̂ and Δ̄ move as the choice set gets easier or the hard set is mined from larger pools?

Each fits the two links on the held-in anchors and reports the held-out mean gain per anchor Δ̄,
exactly like the main test (``held_out_gain``). Scores are (anchors, candidates) with the winner
(the positive) at column 0.
"""

from __future__ import annotations

import numpy as np

from infonce_lab.tails.link import held_out_gain


def frechet_ablation(scores: np.ndarray, held_in: np.ndarray, placement: str = "inside",
                     ) -> dict[str, float]:
    """Δ̄_{F−0} (Fréchet-only blend over softmax), Δ̄_{WF−W} (adding the Fréchet feature to the
    Weibull blend) and the weights of the joint Weibull + Fréchet fit. The Fréchet coordinate for
    cosines is log(1 + s), SPECS B.6's proposal (the paper's ρ is unknown)."""
    _, frechet, d_f0 = held_out_gain(scores, held_in, "softmax", "frechet", placement)
    _, joint, d_wfw = held_out_gain(scores, held_in, "weibull", "weibull_frechet", placement)
    return {
        "delta_frechet_vs_softmax": float(d_f0.mean()),
        "delta_joint_vs_weibull": float(d_wfw.mean()),
        "lambda_frechet_alone": frechet.lambdas["h"],
        "lambda_frechet_joint": joint.lambdas["h"],
        "lambda_weibull_joint": joint.lambdas["g"],
    }


def _choice_gain(choice: np.ndarray, held_in: np.ndarray, placement: str) -> dict[str, float | None]:
    fit0, fit1, delta = held_out_gain(choice, held_in, "softmax", "weibull", placement)
    return {"lambda_hat": fit1.lambdas["g"], "tau1_hat": fit1.tau, "tau0_hat": fit0.tau,
            "delta_mean": float(delta.mean())}


def hardness_ablation(scores: np.ndarray, held_in: np.ndarray, ks: list[int],
                      placement: str = "inside") -> list[dict[str, float | None]]:
    """SPECS B.7, Fig. 7: the choice set is the positive plus each anchor's k hardest negatives of
    its batch; growing k adds easier negatives (the paper: λ̂ and Δ̄ fall)."""
    negatives = -np.sort(-scores[:, 1:], axis=1)
    for k in ks:
        if not 1 <= k <= negatives.shape[1]:
            raise ValueError(f"hardness k = {k} must lie in [1, {negatives.shape[1]}] (the negatives "
                             "per anchor of the bank)")
    return [{"k": int(k), **_choice_gain(np.concatenate([scores[:, :1], negatives[:, :k]], 1),
                                         held_in, placement)} for k in ks]


def pool_size_ablation(s_pos: np.ndarray, pool: np.ndarray, held_in: np.ndarray,
                       sizes: list[int], hard_k: int, placement: str = "inside",
                       ) -> list[dict[str, float | None]]:
    """SPECS B.7, Fig. 8: the choice set is the positive plus the ``hard_k`` highest-scoring
    negatives of the first m columns of each anchor's pool; growing m mines closer to the cap
    (the paper: λ̂ rises)."""
    out = []
    for m in sizes:
        if not hard_k <= m <= pool.shape[1]:
            raise ValueError(f"pool size {m} must lie in [hard_k = {hard_k}, {pool.shape[1]}]")
        hard = -np.sort(-pool[:, :m], axis=1)[:, :hard_k]
        out.append({"pool": int(m), **_choice_gain(np.concatenate([s_pos[:, None], hard], 1),
                                                   held_in, placement)})
    return out
