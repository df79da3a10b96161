"""Each tail-diagnostic configuration's estimates over its seeds (WEINCE §2.3, App. C.2, D): the
aggregate stage writes them to ``summary.json["tails"][<configuration>]["estimates"]``, and the
report decides on them and renders them; nothing here reads params or files.

A configuration is dataset × backbone × loss × schedule; its input is the aggregate's
``per_seed`` map ({epoch: {metric: {seed: value}}}) of the diagnose stage's per-run numbers.
Its estimate is the t-interval over seeds of the per-seed estimates (seeds are the independent
replicates of a training recipe; their spread includes the bank's sampling, which every run
draws afresh through its encoder); with one seed it is that run's own interval — the
image-cluster bootstrap (POT, allocation) or the batch-clustered t (link test, ablations), as
the paper's D.5 clusters by batch. A per-seed value that is undefined (a fit on its boundary, a
degenerate pair of fits, an endpoint above the cap) makes the estimate undefined, never a
number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from infonce_lab.evaluation.estimate import Estimate
from infonce_lab.evaluation.stats import TInference, t_mean

MIN_POOL_POINTS = 4  # pools a λ̂-slope needs (of tails.ablations.pool_sizes)


BOOTSTRAP_DF = 10_000  # a bootstrap standard error: a normal reference (t with huge df)


@dataclass(frozen=True)
class SeedValue:
    """One run's estimate: its value, its own standard error from the bank's sampling (``df``
    None: a bootstrap se, normal reference) and its own interval for the one-seed fallback."""

    value: float
    se: float | None = None
    df: float | None = None
    low: float | None = None
    high: float | None = None
    method: str = ""


def final_epoch(group: Mapping[str, Any]) -> int:
    return max(int(e) for e in group["epochs"])


def seed_values(group: Mapping[str, Any], epoch: int, key: str) -> dict[str, Any]:
    return dict(group.get("per_seed", {}).get(str(epoch), {}).get(key, {}))


def seed_value(group: Mapping[str, Any], epoch: int, key: str, seed: str) -> Any:
    return seed_values(group, epoch, key).get(seed)


def combine(values: Mapping[str, SeedValue], **fmt: Any) -> Estimate:
    """A configuration's estimate from its runs.

    Two seeds or more: the t over seeds (df = n − 1). Each seed is diagnosed on its own bank
    draw (pipeline/extract.py: ``bank_seed``), so the spread over seeds carries the bank's
    sampling error as well as the encoder's, and the runs' own errors are not added in (with
    a bank shared across seeds they would be, and a Welch df built from two seeds and a bank
    error is anti-conservative when the two seeds happen to agree). Two seeds give a t with one
    df: honest and wide; the tail claims count configurations with enough seeds
    (report/sections/weince_tails.py). One seed: the run's own interval (bootstrap
    percentiles, or its t)."""
    if not values:
        return Estimate.missing("no runs")
    items = [values[k] for k in sorted(values, key=int)]
    n = len(items)
    if n == 1:
        (seed, v), = values.items()
        note = f"one seed ({seed}): {v.method}" if v.method else f"one seed ({seed})"
        if v.low is not None and v.high is not None:
            return Estimate(v.value, v.low, v.high, n=1, note=note, **fmt)
        if v.se is not None:
            df = int(v.df) if v.df is not None else BOOTSTRAP_DF
            return Estimate.from_t(TInference(v.value, v.se, max(df, 1), 1), note=note, **fmt)
        return Estimate.missing(f"one seed ({seed}): no per-run interval for this quantity")
    xs = [v.value for v in items]
    t = t_mean(xs)
    if t is None or t.se == 0:
        return Estimate.missing(f"{n} seeds with identical values: no spread, no interval")
    return Estimate.from_t(t, note=f"t over {n} seeds, each on its own bank draw", **fmt)


def _estimate(group: Mapping[str, Any], epoch: int, key: str,
              one: Callable[[str, float], SeedValue | str], **fmt: Any) -> Estimate:
    """The configuration's estimate of ``key`` (:func:`combine`) from every seed's
    :class:`SeedValue` (``one`` builds it, or says why the seed's estimate is undefined); the
    first undefined seed makes the configuration undefined."""
    values = seed_values(group, epoch, key)
    if not values:
        return Estimate.missing(f"{key} not in the results")
    out: dict[str, SeedValue] = {}
    for seed in sorted(values, key=int):
        v = values[seed]
        if v is None or isinstance(v, bool) or not math.isfinite(float(v)):
            return Estimate.missing(f"seed {seed}: {key.rsplit('.', 1)[-1]} undefined")
        built = one(seed, float(v))
        if isinstance(built, str):
            return Estimate.missing(f"seed {seed}: {built}")
        out[seed] = built
    estimate = combine(out, **fmt)
    if group.get("shipped") and estimate.note.startswith("one seed ("):
        # A packaged encoder's weights as shipped: no training seed behind the lone value.
        estimate = replace(estimate, note="the weights as shipped" + estimate.note.split(")", 1)[1])
    return estimate


def _bootstrap_method(group: Mapping[str, Any]) -> str:
    """The resampling unit of the run's bootstrap: images, or sentences for a text bank."""
    return f"{group.get('cluster', 'image')}-cluster bootstrap"


def _num(x: Any) -> float | None:
    return None if x is None or isinstance(x, bool) else float(x)


def _bootstrap_estimate(group: Mapping[str, Any], epoch: int, key: str) -> Estimate:
    """``key`` per seed with the run's cluster bootstrap (``key``_se, _ci_low, _ci_high)."""
    def one(seed: str, v: float) -> SeedValue:
        g = lambda k: _num(seed_value(group, epoch, f"{key}_{k}", seed))  # noqa: E731
        return SeedValue(v, g("se"), None, g("ci_low"), g("ci_high"), _bootstrap_method(group))

    return _estimate(group, epoch, key, one, signed=True)


def _t_estimate(group: Mapping[str, Any], epoch: int, key: str, method: str,
                se_key: str | None = None, df_key: str | None = None,
                flag: tuple[str, str] | None = None, **fmt: Any) -> Estimate:
    """``key`` per seed with the run's own t (se and df at ``se_key`` and ``df_key``, by default
    ``key``_se and _df). ``flag``: (key, why): a seed whose ``key`` is set has no estimate, and
    ``why`` (formatted with its value ``v``) says why."""
    def one(seed: str, v: float) -> SeedValue | str:
        g = lambda k: seed_value(group, epoch, k, seed)  # noqa: E731
        if flag and g(flag[0]):
            return flag[1].format(v=v)
        return SeedValue(v, _num(g(se_key or f"{key}_se")), _num(g(df_key or f"{key}_df")),
                         method=method)

    return _estimate(group, epoch, key, one, **fmt)


def xi_estimate(group: Mapping[str, Any], epoch: int) -> Estimate:
    return _bootstrap_estimate(group, epoch, "pot.xi")


def endpoint_gap_estimate(group: Mapping[str, Any], epoch: int) -> Estimate:
    """(1 − x̂_F)/(1 − u) per seed: the endpoint's shortfall from the cap in tail windows. An
    endpoint fitted above 1 is undefined: the fitted tail puts mass where no cosine can be."""
    def one(seed: str, x_f: float) -> SeedValue | str:
        g = lambda k: _num(seed_value(group, epoch, f"pot.{k}", seed))  # noqa: E731
        if x_f > 1.0:
            return (f"x̂_F = {x_f:.4f} above the cap 1 (the GPD fit extrapolates past the largest "
                    f"cosine {g('max_score') or float('nan'):.3f})")
        lo, hi, se = g("endpoint_ci_low"), g("endpoint_ci_high"), g("endpoint_se")
        if lo is None or hi is None:
            return "the bootstrap reaches ξ ≥ 0: the endpoint's interval is unbounded"
        w = 1.0 - g("u")
        return SeedValue((1.0 - x_f) / w, None if se is None else se / w, None,
                         (1.0 - hi) / w, (1.0 - lo) / w, _bootstrap_method(group))

    values = seed_values(group, epoch, "pot.endpoint")
    if values and any(v is None for v in values.values()):
        seed = next(k for k, v in sorted(values.items()) if v is None)
        return Estimate.missing(f"seed {seed}: ξ̂ ≥ 0, no finite endpoint")
    return _estimate(group, epoch, "pot.endpoint", one, signed=True)


def delta_estimate(group: Mapping[str, Any], epoch: int, placement: str) -> Estimate:
    d = f"link.{placement}.delta"
    return _t_estimate(group, epoch, f"{d}_mean", "batch-clustered t", f"{d}_se", f"{d}_df",
                       (f"{d}_degenerate", "Δ̄ = 0 by construction: λ̂ = 0 or τ̂0 on its bound, "
                                           "H1 and H0 are one link (degenerate fits)"), unit="nats")


def lambda_estimate(group: Mapping[str, Any], epoch: int, placement: str) -> Estimate:
    lam = f"link.{placement}.lambda"
    values = seed_values(group, epoch, f"{lam}_hat")
    if values and any(v is None for v in values.values()):
        return Estimate.missing("λ̂ undefined: the fit ended at τ → ∞")
    e = _t_estimate(group, epoch, f"{lam}_hat", "cluster-robust sandwich", f"{lam}_se",
                    f"{lam}_df", (f"{lam}_boundary", "λ̂ = {v:.3g} on its boundary: no interval "
                                                     "(the MLE is not normal there)"))
    if e.defined and e.has_interval and e.low < 0 and e.high > 1:
        return Estimate.missing(f"interval [{e.low:.2f}, {e.high:.2f}] wider than λ's range "
                                f"[0, 1] ({e.note})")
    return e


def _paired_change(group: Mapping[str, Any], first: int, last: int, placement: str,
                   seed: str) -> SeedValue | str:
    """Δ̄(last) − Δ̄(first) of one run and its batch-clustered se: the two epochs are scored on
    the same held-out batches (one bank), so the difference is paired by batch."""
    key = f"link.{placement}"
    prefix = f"{key}.delta_by_batch."

    def by_batch(epoch: int) -> dict[str, Any]:
        return {k.removeprefix(prefix): v.get(seed)
                for k, v in group.get("per_seed", {}).get(str(epoch), {}).items()
                if k.startswith(prefix)}

    early, late = by_batch(first), by_batch(last)
    d0 = seed_value(group, first, f"{key}.delta_mean", seed)
    d1 = seed_value(group, last, f"{key}.delta_mean", seed)
    if d0 is None or d1 is None:
        return "Δ̄ undefined at one epoch"
    common = sorted(set(early) & set(late), key=int)
    t = t_mean([late[b] - early[b] for b in common
                if late[b] is not None and early[b] is not None])
    if t is None:
        return SeedValue(d1 - d0, method="no per-batch Δ̄ in the results")
    return SeedValue(d1 - d0, t.se, t.df, method="batch-paired t")


def delta_change(group: Mapping[str, Any], placement: str) -> tuple[Estimate, Estimate] | None:
    """(Δ̄ at the first diagnosed epoch, Δ̄(last) − Δ̄(first) paired by seed and batch); None
    with one diagnosed epoch."""
    epochs = sorted(int(e) for e in group["epochs"])
    if len(epochs) < 2:
        return None
    first, last = epochs[0], epochs[-1]
    early, late = (delta_estimate(group, e, placement) for e in (first, last))
    if not early.defined or not late.defined:
        return early, Estimate.missing(early.undefined or late.undefined or "Δ̄ undefined")
    return early, _estimate(group, last, f"link.{placement}.delta_mean",
                            lambda seed, _: _paired_change(group, first, last, placement, seed),
                            unit="nats", signed=True)


def frechet_estimates(group: Mapping[str, Any], epoch: int) -> tuple[Estimate, Estimate]:
    """(the Fréchet weight λ_F by the score test, the smallest collinearity R² over seeds)."""
    lam = _t_estimate(group, epoch, "frechet.frechet_lambda_score", "score test, batch-clustered",
                      signed=True, digits=2)
    r2s = [v for v in seed_values(group, epoch, "frechet.frechet_collinearity_r2").values()
           if v is not None]
    r2 = (Estimate(min(r2s), digits=4) if r2s else
          Estimate.missing("no collinearity R² in the results"))
    return lam, r2


def frechet_alone_estimate(group: Mapping[str, Any], epoch: int) -> Estimate:
    """Δ̄_{F−0}: the held-out gain of the Fréchet-only blend over softmax (batch-clustered t)."""
    if any(seed_value(group, epoch, "frechet.delta_frechet_vs_softmax_se", s) is None
           for s in seed_values(group, epoch, "frechet.delta_frechet_vs_softmax")):
        return Estimate.missing("no se of Δ̄_F−0 in the results: re-run the diagnose stage")
    return _t_estimate(group, epoch, "frechet.delta_frechet_vs_softmax", "batch-clustered t",
                       unit="nats", signed=True)


def slope_estimate(group: Mapping[str, Any], epoch: int, axis: str, quantity: str) -> Estimate:
    """Slope per doubling of the ablation's axis, with its per-run cluster-robust se: Δ̄'s over
    held-out batches, λ̂'s from the sandwich influences over held-in batches (points where λ̂
    sits on a bound held fixed)."""
    key = f"ablations.{axis}_{quantity}_slope"
    method = ("batch-clustered t" if quantity == "delta" else
              "cluster-robust sandwich, bound points held fixed")
    return _t_estimate(group, epoch, key, method, signed=True)


def pool_lambda_estimate(group: Mapping[str, Any], epoch: int) -> Estimate:
    """The pool ablation's λ̂ slope, undefined where a seed's slope rests on fewer than
    MIN_POOL_POINTS pools (the others dropped for a degenerate softmax fit): a slope through
    three points, one of them on its bound, decides nothing."""
    points = [_num(v) for v in seed_values(group, epoch, "ablations.pool_lambda_points").values()]
    few = [int(p) for p in points if p is not None and p < MIN_POOL_POINTS]
    if few:
        return Estimate.missing(f"a seed's slope rests on {min(few)} pools (fewer than "
                                f"{MIN_POOL_POINTS} with a non-degenerate softmax fit)")
    return slope_estimate(group, epoch, "pool", "lambda")


def allocation_estimate(group: Mapping[str, Any], epoch: int) -> Estimate:
    return _bootstrap_estimate(group, epoch, "allocation.tv_gap")


def repulsion_taus(group: Mapping[str, Any], epoch: int) -> list[str]:
    """The τ keys of the repulsion shares, high τ first."""
    keys = [k.removeprefix("repulsion.share.") for k in group.get("per_seed", {}).get(str(epoch), {})
            if k.startswith("repulsion.share.")]
    return sorted(keys, key=lambda k: -float(k.removeprefix("tau_")))


def _repulsion(group: Mapping[str, Any], epoch: int, kind: str, tau: str) -> Estimate:
    return _t_estimate(group, epoch, f"repulsion.{kind}.{tau}", "batch-clustered t",
                       f"repulsion.{kind}_se.{tau}", "repulsion.df")


def placements(group: Mapping[str, Any]) -> list[str]:
    """The link test's placements the diagnose stage ran, in its order (the first decides)."""
    keys = group.get("per_seed", {}).get(str(final_epoch(group)), {})
    return list(dict.fromkeys(k.split(".")[1] for k in keys
                              if k.startswith("link.") and k.endswith(".delta_mean")))


def estimates(group: Mapping[str, Any]) -> dict[str, Estimate]:
    """Every estimate a tail claim reads, at the configuration's final diagnosed epoch:
    ``xi``, ``endpoint_gap``, ``frechet_lambda``, ``frechet_r2`` (the smallest collinearity R²
    over seeds), ``frechet_alone`` (Δ̄_F−0), ``hardness.lambda``/``.delta``, ``pool.lambda``, ``tv_gap``; per placement
    ``delta.<p>``, ``lambda.<p>`` and, with two diagnosed epochs, ``delta_first.<p>`` and
    ``delta_change.<p>`` (paired by seed and batch); per τ ``repulsion.share.<τ>`` and, for
    every step down in τ, ``repulsion.rise.<τ>``."""
    e = final_epoch(group)
    lam_f, r2 = frechet_estimates(group, e)
    out = {"xi": xi_estimate(group, e), "endpoint_gap": endpoint_gap_estimate(group, e),
           "frechet_lambda": lam_f, "frechet_r2": r2,
           "frechet_alone": frechet_alone_estimate(group, e),
           "hardness.lambda": slope_estimate(group, e, "hardness", "lambda"),
           "hardness.delta": slope_estimate(group, e, "hardness", "delta"),
           "pool.lambda": pool_lambda_estimate(group, e), "tv_gap": allocation_estimate(group, e)}
    for p in placements(group):
        out[f"delta.{p}"] = delta_estimate(group, e, p)
        out[f"lambda.{p}"] = lambda_estimate(group, e, p)
        change = delta_change(group, p)
        if change is not None:
            out[f"delta_first.{p}"], out[f"delta_change.{p}"] = change
    taus = repulsion_taus(group, e)
    for i, tau in enumerate(taus):
        out[f"repulsion.share.{tau}"] = _repulsion(group, e, "share", tau)
        if i:
            out[f"repulsion.rise.{tau}"] = _repulsion(group, e, "rise", tau)
    return out
