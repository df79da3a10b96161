"""Per-encoder metrics → per-configuration summaries over seeds (mean, std, 95% t-interval)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from infonce_lab.evaluation import metrics
from infonce_lab.evaluation.stats import block_pooled_difference, mean_ci, ols_ci, t_mean
from infonce_lab.evaluation.tail_estimates import estimates
from infonce_lab.io import read_json
from infonce_lab.params import Configuration, Params, Run, TextRun

COMPARED = metrics.names(compared=True)


def compared(df: pd.DataFrame) -> list[str]:
    """The compared metrics the runs have (a recall@k outside evaluation.recall_ks is absent)."""
    return [m for m in COMPARED if m in df.columns]


SECTIONS = tuple(dict.fromkeys(m.name.split(".")[0] for m in metrics.METRICS))


def metric_columns(df: pd.DataFrame) -> list[str]:
    """Every per-encoder metric of a declared section (``linear.*``, ``knn.*`` at every recall
    k, ``few.*``, …), in a stable order; spreads over probe seeds or label draws are not."""
    return sorted(c for c in df.columns if c.split(".")[0] in SECTIONS and not c.endswith("_std"))


def group_id(enc: dict[str, Any]) -> str:
    """Encoders that differ only by seed share a group."""
    kind = enc["kind"]
    if kind == "trained":
        return Configuration(enc["dataset"], enc["backbone"], enc["loss"], enc["schedule"]).to_str()
    if kind == "random_init":
        return f"{enc['dataset']}-{enc['backbone']}-random_init"
    return f"{enc['dataset']}-{kind}"


def _flatten(record: dict[str, Any]) -> dict[str, Any]:
    row = {f"encoder.{k}": v for k, v in record["encoder"].items()}
    for section, values in record.items():
        if section != "encoder":
            row.update({f"{section}.{k}": v for k, v in values.items()})
    return row


def _collect_rows(runs: list[Run] | list[TextRun], datasets: list[str], with_baselines: bool,
                  metrics_dir: Path, stage: str) -> list[dict[str, Any]]:
    """Flattened metric rows of the listed runs and of each dataset's baselines file (both
    under ``metrics_dir`` as the pipeline lays them out: runs/<dataset>/<run>.json and
    baselines/<dataset>.json); a missing file names the stage that writes it. Stale files of
    removed runs are never read."""
    rows = []
    for run in runs:
        path = metrics_dir / "runs" / run.dataset / f"{run.id}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; run the {stage} stage for {run.dataset}")
        rows.append({"encoder_id": run.id, **_flatten(read_json(path))})
    for dataset in datasets if with_baselines else []:
        path = metrics_dir / "baselines" / f"{dataset}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; run the {stage} stage for {dataset}")
        for name, record in read_json(path).items():
            rows.append({"encoder_id": f"{dataset}-{name}", **_flatten(record)})
    return rows


def collect(params: Params, metrics_dir: str | Path = "reports/metrics") -> pd.DataFrame:
    """One row per encoder of the *current* study (stale files of removed runs are ignored)."""
    rows = _collect_rows(params.runs(), list(params.study.datasets),
                         bool(params.study.baselines), Path(metrics_dir), "evaluate")
    df = pd.DataFrame(rows)
    df["group"] = [group_id({k.removeprefix("encoder."): r[k] for k in df.columns
                             if k.startswith("encoder.") and pd.notna(r[k])})
                   for _, r in df.iterrows()]
    return df


def summarise(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """{group: {"kind", "dataset", ..., "n_encoders", metric: {mean, std, n, ci95}}}.

    Trained groups also get ``gain_over_random_init``: per metric, the paired difference to the
    random-init encoder of the same backbone and seed (that encoder is the run's own starting
    point), summarised with a paired t-interval.
    """
    out: dict[str, dict[str, Any]] = {}
    for group, part in df.groupby("group", sort=False):
        entry = out[group] = _group_entry(part, metric_columns(df), ("encoder.seed",))
        if entry.get("kind") == "trained":
            gains = _paired_gains(df, part)
            if gains:
                entry["gain_over_random_init"] = gains
    return out


def _group_entry(part: pd.DataFrame, metric_names: Sequence[str], skip: tuple[str, ...]
                 ) -> dict[str, Any]:
    """A group's encoder fields (its first row's, but ``skip``), its size and each metric's
    mean_ci over the encoders that have it."""
    first = part.iloc[0]
    entry: dict[str, Any] = {k.removeprefix("encoder."): first[k] for k in part.columns
                             if k.startswith("encoder.") and k not in skip and pd.notna(first[k])}
    entry["n_encoders"] = int(len(part))
    for metric in metric_names:
        values = part[metric].dropna().astype(float).tolist() if metric in part.columns else []
        if values:
            entry[metric] = mean_ci(values)
    return entry


def _paired_gains(df: pd.DataFrame, part: pd.DataFrame) -> dict[str, Any]:
    base = df[df["encoder.kind"] == "random_init"]
    pairs = part.merge(base, on=["encoder.dataset", "encoder.backbone", "encoder.seed"],
                       suffixes=("", ".base"))
    if pairs.empty:
        return {}
    out = {}
    for m in metrics.names(headline=True):
        diff = (pairs[m].astype(float) - pairs[f"{m}.base"].astype(float)).tolist()
        t = t_mean(diff)
        out[m] = {**mean_ci(diff), "t": None if t is None else t.to_json()}
    return out


class IncompleteSeeds(ValueError):
    """Two configurations compared on different seed sets."""


def _trained(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["encoder.kind"] == "trained"]


def paired_comparison(df: pd.DataFrame, a: str, b: str, metric: str) -> dict[str, Any]:
    """Configuration ``a`` minus ``b`` on the same seeds: mean difference, 95% t-interval, and
    the two-sided paired t-test. Refuses seed sets that differ."""
    from scipy import stats

    pa = df[df["group"] == a].set_index("encoder.seed")[metric].astype(float)
    pb = df[df["group"] == b].set_index("encoder.seed")[metric].astype(float)
    if set(pa.index) != set(pb.index):
        raise IncompleteSeeds(
            f"cannot compare {a} with {b} on {metric}: seeds {sorted(pa.index)} vs "
            f"{sorted(pb.index)}; run the missing seeds (study.seeds) or compare complete sets"
        )
    diff = (pa - pb.loc[pa.index]).tolist()
    res = mean_ci(diff)
    p = float(stats.ttest_rel(pa.tolist(), pb.loc[pa.index].tolist()).pvalue) if len(diff) > 1 else None
    t = t_mean(diff)
    # ``t`` is the paired t-inference (mean, se, df, n) the report's rules test at their own
    # null values (superiority, non-inferiority, equivalence) and Holm-adjust within a family;
    # ``per_seed`` keeps every seed's difference so pooled rows can average within a seed.
    # ``mde_80``: the smallest true difference this many seeds detect with 80% power at the
    # observed paired SD — what an inconclusive row could have seen.
    return {"a": a, "b": b, "metric": metric, "diff": res, "p_value": p if p == p else None,
            "t": None if t is None else t.to_json(),
            "mde_80": None if t is None else t.minimal_detectable_effect(),
            "per_seed": {str(int(k)): float(v) for k, v in zip(pa.index, diff, strict=True)}}


def _settings(df: pd.DataFrame) -> Iterator[tuple[str, list[str], list[str]]]:
    """Each trained setting ``<dataset>-<backbone>`` with its losses and schedules, in study order."""
    for (d, b), part in _trained(df).groupby(["encoder.dataset", "encoder.backbone"], sort=False):
        yield (f"{d}-{b}", list(dict.fromkeys(part["encoder.loss"])),
               list(dict.fromkeys(part["encoder.schedule"])))


def paired_comparisons(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Every pair of losses at each schedule, and every pair of schedules for each loss."""
    out: dict[str, dict[str, Any]] = {}
    for s, losses, schedules in _settings(df):
        pairs = [((f"{s}-{x}-{sc}", f"{s}-{y}-{sc}"), f"{x}_vs_{y}@{sc}")
                 for sc in schedules for i, x in enumerate(losses) for y in losses[i + 1:]]
        pairs += [((f"{s}-{lo}-{x}", f"{s}-{lo}-{y}"), f"{x}_vs_{y}@{lo}")
                  for lo in losses for i, x in enumerate(schedules) for y in schedules[i + 1:]]
        for (ga, gb), name in pairs:
            for metric in compared(df):
                out[f"{s}/{name}/{metric}"] = paired_comparison(df, ga, gb, metric)
    return out


def pooled_pair(a: str, b: str, metric: str, blocks: dict[str, dict[str, float]],
                ) -> dict[str, Any]:
    """Losses ``a`` − ``b`` on ``metric`` pooled over schedules, from each schedule's per-seed
    differences (:func:`~infonce_lab.evaluation.stats.block_pooled_difference`: each seed's mean
    over the schedules, then a t over seeds; ``t`` None with one seed or unequal seed sets)."""
    try:
        t = block_pooled_difference(blocks)
    except ValueError:  # the schedules ran different seeds: no pooled test
        t, seeds = None, []
    else:
        seeds = list(next(iter(blocks.values()), {}))
    return {"a": a, "b": b, "metric": metric, "schedules": list(blocks),
            "per_seed": {k: float(np.mean([d[k] for d in blocks.values()])) for k in seeds},
            "t": None if t is None else t.to_json()}


def pooled_over_schedules(paired: dict[str, dict[str, Any]], df: pd.DataFrame,
                          ) -> dict[str, dict[str, Any]]:
    """Every pair of losses of ``paired`` (:func:`paired_comparisons`) pooled over the
    schedules (:func:`pooled_pair`), keyed ``<dataset>-<backbone>/<a>_vs_<b>@pooled/<metric>``
    as the paired rows are."""
    return {f"{s}/{x}_vs_{y}@pooled/{m}": pooled_pair(
                x, y, m, {sc: paired[f"{s}/{x}_vs_{y}@{sc}/{m}"]["per_seed"] for sc in schedules})
            for s, losses, schedules in _settings(df)
            for i, x in enumerate(losses) for y in losses[i + 1:] for m in compared(df)}


def primary_comparisons(df: pd.DataFrame, setting: str, schedule: str,
                        families: list[tuple[str, list[int], list[tuple[str, str]]]],
                        metric_names: list[str]) -> dict[str, dict[str, Any]]:
    """The pre-registered comparisons: per family (name, seeds, contrasts), each (treatment,
    reference) at ``setting`` (``<dataset>-<backbone>``) and ``schedule``, treatment − reference
    on each metric over the family's own seeds (a loss compared in two families trains both
    seed sets), keyed as :func:`paired_comparisons` keys its rows."""
    out: dict[str, dict[str, Any]] = {}
    for family, seeds, contrasts in families:
        mine = df[df["encoder.seed"].isin(seeds)]
        for t, r in contrasts:
            for m in metric_names:
                out[f"{setting}/{t}_vs_{r}@{schedule}/{m}"] = {
                    **paired_comparison(mine, f"{setting}-{t}-{schedule}",
                                        f"{setting}-{r}-{schedule}", m),
                    "family": family}
    return out


AU_METRICS = metrics.names(headline=True)
# The plane's coordinates per embedding: the projector's output z (where the losses act, and
# where Wang & Isola measure them) decides; the backbone's h (what the probes read) is shown.
AU_EMBEDDINGS = {"z": ["geometry_z.alignment", "geometry_z.uniformity"],
                 "h": ["geometry.alignment", "geometry.uniformity"]}


def _au_fit(part: pd.DataFrame, metric: str, coords: list[str]) -> dict[str, Any] | None:
    """OLS of ``metric`` on alignment and uniformity (``coords``) with errors clustered by
    configuration (the seeds of one configuration share everything but the seed); None when
    there are too few configurations for clustered errors on two slopes."""
    from scipy import stats

    x = part[coords].to_numpy(dtype=float)
    y = part[metric].to_numpy(dtype=float)
    try:
        fit = ols_ci(x, y, groups=part["group"].tolist())
    except ValueError:
        return None
    block: dict[str, Any] = {"r2": fit["r2"], "dof": fit["dof"], "clusters": fit["clusters"],
                             "n": fit["n"]}
    for j, name in enumerate(("alignment", "uniformity")):
        rho = stats.spearmanr(x[:, j], y)
        block[name] = {"coef": fit["coef"][j], "se": fit["se"][j], "ci_low": fit["ci_low"][j],
                       "ci_high": fit["ci_high"][j], "p": fit["p"][j],
                       "spearman": float(rho.statistic), "spearman_p": float(rho.pvalue)}
    return block


def alignment_uniformity(df: pd.DataFrame) -> dict[str, Any]:
    """Wang & Isola's empirical claim, per dataset and embedding (z, h): does accuracy fall with
    alignment *and* uniformity over the trained encoders (every seed of every configuration)?
    OLS of the accuracy on both coordinates, errors clustered by configuration. The random
    initialisations are a labelled reference, not data of the claim: a second fit that includes
    them (as one more cluster) shows how much they lever the slopes. Keys, not lists, so ``dvc
    metrics diff`` names every number: ``<dataset>.<embedding>.<metric>``."""
    out: dict[str, Any] = {}
    for embedding, coords in AU_EMBEDDINGS.items():
        if not set(coords) <= set(df.columns):
            continue
        enc = df[df["encoder.kind"].isin(("trained", "random_init"))].dropna(subset=coords)
        for dataset, part in enc.groupby("encoder.dataset", sort=False):
            trained = part[part["encoder.kind"] == "trained"]
            entry: dict[str, Any] = {
                "n_encoders": int(len(trained)),
                "n_configurations": int(trained["group"].nunique()),
                "n_random_init": int((part["encoder.kind"] == "random_init").sum())}
            for metric in AU_METRICS:
                fit = _au_fit(trained, metric, coords)
                if fit is None:
                    continue
                entry[metric] = fit
                reference = _au_fit(part, metric, coords)
                if reference is not None and entry["n_random_init"]:
                    entry[f"{metric}.with_random_init"] = reference
            out.setdefault(str(dataset), {})[embedding] = entry
    return out


def _expected_max_normal(k: int) -> float:
    """E[max of k independent N(0, 1)] = ∫ x·k·φ(x)·Φ(x)^(k−1) dx."""
    from scipy import integrate, stats

    return float(integrate.quad(lambda x: x * k * stats.norm.pdf(x) * stats.norm.cdf(x) ** (k - 1),
                                -12, 12)[0])


def selection_inflation(df: pd.DataFrame, metric: str = "linear", grid: int = 27, seeds: int = 4,
                        replicates: int = 2000, seed: int = 0) -> dict[str, Any] | None:
    """The expected test-score gain of choosing the validation-best of ``grid`` equally good
    configurations (each the mean of ``seeds`` encoders), from this study's encoder noise.

    With encoder deviations from their configuration's mean (ε_val, ε_test), correlation ρ and
    test spread σ_test, the validation-best configuration's expected test excess is
    ρ·σ_test/√seeds·E[max of grid N(0, 1)] (the regression of the test mean on the validation
    mean of a bivariate normal). σ_test and ρ are pooled within configurations; the interval is
    a percentile bootstrap over configurations. In accuracy points. None with fewer than two
    configurations of ≥ 2 seeds."""
    t = _trained(df)
    val, test = f"{metric}.val_acc", f"{metric}.test_acc"
    groups = [g for g, p in t.groupby("group", sort=False) if len(p) >= 2]
    if len(groups) < 2:
        return None
    dev = {g: (p[val].to_numpy(float) - p[val].mean(), p[test].to_numpy(float) - p[test].mean())
           for g, p in t[t["group"].isin(groups)].groupby("group", sort=False)}
    expected_max = _expected_max_normal(grid)
    factor = expected_max / math.sqrt(seeds)

    def stats_of(keys: list[str]) -> tuple[float, float, float]:
        dv = np.concatenate([dev[k][0] for k in keys])
        dt = np.concatenate([dev[k][1] for k in keys])
        dof = len(dv) - len(keys)
        sd_v, sd_t = math.sqrt(dv @ dv / dof), math.sqrt(dt @ dt / dof)
        rho = float(dv @ dt / dof / (sd_v * sd_t)) if sd_v > 0 and sd_t > 0 else 0.0
        return rho, sd_t, 100.0 * rho * sd_t * factor

    rho, sd_t, inflation = stats_of(groups)
    rng = np.random.default_rng(seed)
    boot = [stats_of(list(rng.choice(groups, size=len(groups))))[2] for _ in range(replicates)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"metric": metric, "grid": grid, "seeds": seeds, "rho": rho, "sd_test": sd_t,
            "expected_max_normal": expected_max,
            "encoders": int(sum(len(dev[g][0]) for g in groups)), "configurations": len(groups),
            "inflation_points": {"value": inflation, "low": float(lo), "high": float(hi),
                                 "level": 0.95, "method": f"bootstrap over configurations "
                                 f"({replicates})"}}


def select_on_validation(df: pd.DataFrame, summary: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per dataset × backbone (and per loss): the configuration with the best mean *validation*
    score, and its test score — the only test figure a selection may report (WEINCE App. F.1). kNN
    metrics are selected separately per metric."""
    t = _trained(df)
    targets = {m.name: m.selected_on for m in metrics.METRICS if m.selected_on}
    targets |= {c: c.replace("test_", "val_") for c in df.columns if c.startswith("knn.test_recall")}
    out: dict[str, Any] = {}
    for (d, b), part in t.groupby(["encoder.dataset", "encoder.backbone"], sort=False):
        scopes = {"all": part} | {f"loss={lo}": p for lo, p in part.groupby("encoder.loss", sort=False)}
        for scope, sub in scopes.items():
            groups = list(dict.fromkeys(sub["group"]))
            seeds = {g: set(sub[sub["group"] == g]["encoder.seed"]) for g in groups}
            complete = [g for g in groups if seeds[g] == set().union(*seeds.values())]
            for test_metric, val_metric in targets.items():
                best = max(complete, key=lambda g: summary[g][val_metric]["mean"])
                out[f"{d}-{b}/{scope}/{test_metric}"] = {
                    "selected": best, "by": val_metric,
                    "val": summary[best][val_metric], "test": summary[best][test_metric],
                }
    return out


# ------------------------------------------------------------------------- tail diagnostics
def _scalars(tree: dict[str, Any]) -> dict[str, float]:
    """The defined numbers among :func:`_leaves` (no None, NaN or flag)."""
    return {k: v for k, v in _leaves(tree).items() if v is not None and not isinstance(v, bool)}


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, float | bool | None]:
    """Every scalar leaf of a diagnose record, None and flags included (``_scalars`` keeps the
    numbers only): a per-seed value that is None says the estimate was undefined in that run."""
    out: dict[str, float | bool | None] = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_leaves(v, f"{prefix}{k}."))
        elif v is None or isinstance(v, bool):
            out[f"{prefix}{k}"] = v
        elif isinstance(v, (int, float)):
            out[f"{prefix}{k}"] = float(v) if v == v else None
    return out


def summarise_tails(params: Params, tails_dir: str | Path = "reports/tails") -> dict[str, Any]:
    """One entry per configuration (runs that differ only by seed), from the diagnose stage's
    per-run files (``tails_dir``/runs/<dataset>/<run>.json):

    - ``run``: its dataset, backbone, loss and schedule; ``seeds``: the seeds diagnosed;
    - ``by_epoch``: {epoch: {metric: mean_ci over seeds}} for every numeric scalar (e.g.
      ``pot.xi``, ``link.inside.delta_mean``) — a description, not a test;
    - ``per_seed``: {epoch: {metric: {seed: value}}} for every scalar, None and flags included,
      so the report's inference is over seeds on per-seed estimates (or, with one seed, on that
      run's own interval) and never on averaged p-values or averaged intervals;
    - ``estimates``: those inferences, {name: estimate} at the final diagnosed epoch.
    """
    tails_dir = Path(tails_dir)
    per_group: dict[str, dict[int, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    per_seed: dict[str, dict[int, dict[str, dict[str, float | bool | None]]]] = defaultdict(
        lambda: defaultdict(dict))
    info: dict[str, dict[str, Any]] = {}
    for run in params.diagnosed_runs():  # the diagnose stage's runs
        path = tails_dir / "runs" / run.dataset / f"{run.id}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; run the diagnose stage for {run.dataset}")
        record = read_json(path)
        dumped = run.model_dump()
        group = group_id({"kind": "trained", **dumped})
        entry = info.setdefault(group, {"run": {k: dumped[k] for k in ("dataset", "backbone", "loss",
                                                                       "schedule")},
                                        "seeds": []})
        entry["seeds"].append(int(dumped["seed"]))
        for key, values in record.items():
            if key.startswith("epoch_"):
                epoch = int(key.removeprefix("epoch_"))
                for metric, v in _scalars(values).items():
                    per_group[group][epoch][metric].append(v)
                for metric, v in _leaves(values).items():
                    per_seed[group][epoch].setdefault(metric, {})[str(dumped["seed"])] = v
    return {group: _with_estimates(
                {**info[group], "epochs": sorted(epochs),
                 "by_epoch": {str(e): {m: mean_ci(v) for m, v in sorted(epochs[e].items())}
                              for e in sorted(epochs)},
                 "per_seed": {str(e): dict(sorted(per_seed[group][e].items()))
                              for e in sorted(epochs)}})
            for group, epochs in per_group.items()}


def _with_estimates(group: dict[str, Any]) -> dict[str, Any]:
    """``group`` with its ``estimates`` over seeds (:func:`~infonce_lab.evaluation.
    tail_estimates.estimates`), the numbers the report's tail claims decide on."""
    return {**group, "estimates": {k: e.to_json() for k, e in estimates(group).items()}}


def summarise_text_tails(params: Params, tails_dir: str | Path = "reports/tails"
                         ) -> dict[str, Any]:
    """The packaged encoders' tail diagnostics (``text.tails``) as :func:`summarise_tails`
    groups of one "seed" and one "epoch" (0: the weights as shipped), so the report's estimators
    read them like a one-seed configuration: each estimate is that bank's own interval."""
    out: dict[str, Any] = {}
    if not params.text.tails.encoders:
        return out
    for dataset in params.text.study.datasets:
        path = Path(tails_dir) / "text" / f"{dataset}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; run the text_evaluate stage for {dataset}")
        for name, record in read_json(path).items():
            m = record["metrics"]
            out[f"{dataset}-{name}"] = _with_estimates({
                "run": {"dataset": dataset, "backbone": name, "loss": "as shipped",
                        "schedule": "as shipped"},
                "source": record["source"], "views": m["views"], "seeds": [0], "epochs": [0],
                "shipped": True, "cluster": "sentence",
                "by_epoch": {"0": {k: mean_ci([v]) for k, v in sorted(_scalars(m).items())}},
                "per_seed": {"0": {k: {"0": v} for k, v in sorted(_leaves(m).items())}}})
    return out


# ------------------------------------------------------------------------------------- text
TEXT_METRICS = metrics.names(text=True)


def text_group_id(enc: dict[str, Any]) -> str:
    kind = enc["kind"]
    if kind == "trained":
        return Configuration(enc["dataset"], enc["encoder"], enc["loss"], enc["schedule"]).to_str()
    if kind == "untuned":
        return f"{enc['dataset']}-{enc['encoder']}-untuned"
    return f"{enc['dataset']}-{kind}"


def collect_text(params: Params, metrics_dir: str | Path = "reports/metrics/text") -> pd.DataFrame:
    """One row per text encoder of the current text study (trained runs and baselines)."""
    rows = _collect_rows(params.text_runs(), list(params.text.study.datasets),
                         bool(params.text.study.baselines), Path(metrics_dir), "text_evaluate")
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["group"] = [text_group_id({k.removeprefix("encoder."): r[k] for k in df.columns
                                  if k.startswith("encoder.") and pd.notna(r[k])})
                   for _, r in df.iterrows()]
    return df


def summarise_text(df: pd.DataFrame) -> dict[str, Any]:
    """{"groups": {group: {kind, dataset, …, n_encoders, metric: mean_ci}}, "paired": {…}}.

    Paired: every pair of losses at the same dataset × encoder × schedule, on the STS Spearman,
    over common seeds (:func:`paired_comparison`: the mean difference a − b with its two-sided
    95% t-interval, the t-inference the report's rules test at any null value — and Holm-adjust
    within a family — and every seed's difference).
    """
    if df.empty:
        return {"groups": {}, "paired": {}}
    groups = {group: _group_entry(part, TEXT_METRICS, ("encoder.seed", "encoder.step"))
              for group, part in df.groupby("group", sort=False)}
    paired: dict[str, Any] = {}
    t = _trained(df)
    for (d, e, sc), part in t.groupby(["encoder.dataset", "encoder.encoder", "encoder.schedule"],
                                      sort=False):
        losses = list(dict.fromkeys(part["encoder.loss"]))
        for i, x in enumerate(losses):
            for y in losses[i + 1:]:
                ga, gb = f"{d}-{e}-{x}-{sc}", f"{d}-{e}-{y}-{sc}"
                paired[f"{d}-{e}/{x}_vs_{y}@{sc}/sts.test_spearman"] = paired_comparison(
                    df, ga, gb, "sts.test_spearman")
    return {"groups": groups, "paired": paired}
