"""The WEINCE tail-diagnostics figures from synthetic plot data shaped like the diagnose stage's
files, and the choice of the representative run (the section's rules: test_report_weince_tails)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from infonce_lab.report.loaders import representative_plots
from infonce_lab.report.sections.weince_tails import (
    allocation_shares,
    gpd_fit,
    link_ablations,
    noise_floor_curves,
    tail_figures,
    tails_over_training,
)

PNG = b"\x89PNG"


def _m(mean: float, ci95: float | None = None, n: int = 1) -> dict[str, Any]:
    return {"mean": mean, "std": None if ci95 is None else 0.0, "n": n, "ci95": ci95}


def _metrics(**overrides: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """A final-epoch metric block in which every claim holds; ``overrides`` use '__' for '.'."""
    base = {
        "pot.xi": _m(-0.45), "pot.xi_ci_high": _m(-0.43), "pot.endpoint": _m(0.99),
        "link.inside.lambda_hat": _m(0.40), "link.inside.delta_mean": _m(0.25),
        "link.inside.delta_ci_low": _m(0.10), "link.inside.t_pvalue": _m(0.01),
        "link.inside.lrt_pvalue": _m(0.025), "link.outside.lambda_hat": _m(0.9),
        "frechet.delta_joint_vs_weibull": _m(1e-9),
        "ablations.hardness_lambda_spearman": _m(-1.0),
        "ablations.hardness_delta_spearman": _m(-0.8),
        "ablations.pool_lambda_spearman": _m(0.9), "ablations.pool_delta_spearman": _m(0.5),
        "allocation.weibit_tv_to_risk": _m(0.2), "allocation.softmax_tv_to_risk": _m(0.4),
    }
    for key, value in overrides.items():
        key = key.replace("__", ".")
        if value is None:
            base.pop(key)
        else:
            base[key] = value
    return base


def _group(metrics: dict[str, Any], epochs: tuple[int, ...] = (20, 40, 60)) -> dict[str, Any]:
    return {"epochs": list(epochs), "by_epoch": {str(e): metrics for e in epochs}}


NOISE = {"params": {"beta": 0.8, "scores": [0.15, 0.45, 0.7, 0.9], "replicates": 100},
         "n": [100, 1000, 10000], "mse_weibit": [0.07, 0.007, 0.0007],
         "theory_weibit": [0.071, 0.0071, 0.00071], "mse_softmax": [0.19, 0.06, 0.0465],
         "softmax_floor": 0.045, "truth": 1.7, "theta_pseudo": 2.5}


def _plots(epoch_seed: int = 0) -> dict[str, Any]:
    """One epoch block of a diagnose plots file (shapes as the stage writes them)."""
    x = [0.0025 * (i + 0.5) for i in range(40)]
    edges = [-1.0 + 0.05 * i for i in range(41)]
    zeros = [0.0] * 36
    return {
        "ablation_placement": "inside",
        "pot": {"u": 0.885,
                "qq": {"p": [i / 100 for i in range(1, 100)],
                       "empirical": [0.001 * i for i in range(1, 100)],
                       "gpd": [0.00105 * i for i in range(1, 100)]},
                "density": {"x": x, "empirical": [max(0.0, 20 - 200 * v) for v in x],
                            "gpd": [21 - 200 * v for v in x],
                            "exponential": [30 * math.exp(-30 * v) for v in x]},
                "stability": [{"q": q, "xi": -0.45 + 0.01 * i, "n": 1000 - 100 * i}
                              for i, q in enumerate((0.98, 0.985, 0.99, 0.992, 0.995))]},
        "hardness": [{"k": k, "lambda_hat": 1.0 / (i + 1), "delta_mean": 0.1 / (i + 1),
                      "tau0_hat": 0.1, "tau1_hat": None} for i, k in enumerate((32, 64, 128, 254))],
        "pool_size": [{"pool": p, "lambda_hat": math.nan if p == 1024 else 0.1 * (i + 1),
                       "delta_mean": 0.03, "tau0_hat": None, "tau1_hat": 0.2}
                      for i, p in enumerate((64, 128, 256, 512, 1024))],
        "allocation": {"bin_edges": edges, "failure_rate": 0.72 + 0.01 * epoch_seed,
                       "risk": zeros + [0.1, 0.2, 0.3, 0.4],
                       "softmax_grad": zeros + [0.25, 0.25, 0.25, 0.25],
                       "weibit_grad": zeros + [0.05, 0.15, 0.3, 0.5]}}


def _tails() -> dict[str, Any]:
    groups = {}
    for loss in ("infonce", "weince"):
        for schedule in ("fixed_t02", "cosine"):
            groups[f"digits-resnet_digits-{loss}-{schedule}"] = _group(
                _metrics(pot__xi=_m(-0.45, 0.02, 2), link__inside__delta_mean=_m(0.03, 0.01, 2)))
    return groups


def test_figures_are_png():
    plots = _plots()
    assert tails_over_training(_tails(), "inside").startswith(PNG)
    assert gpd_fit(plots["pot"], "run, epoch 60").startswith(PNG)
    assert link_ablations({"d-b-l-s-1": plots, "d-b-l-s-2": _plots(1)}).startswith(PNG)
    assert allocation_shares(plots["allocation"], "run, epoch 60").startswith(PNG)
    assert noise_floor_curves(NOISE).startswith(PNG)


def test_tail_figures_skip_what_is_missing():
    assert set(tail_figures(_tails(), "inside", None, None)) == {"tails_over_training"}


def _write_plots(folder: Path, run: str, epochs: tuple[int, ...]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{run}.json").write_text(json.dumps({f"epoch_{e}": _plots(e) for e in epochs}))


def test_representative_is_the_first_run_with_plots(tmp_path: Path):
    runs = ["d-b-a-s-1", "d-b-a-s-2", "d-b-c-s-1", "d-b-c-s-2"]
    _write_plots(tmp_path, "d-b-c-s-1", (1, 3))
    _write_plots(tmp_path, "d-b-c-s-2", (1, 3))
    _write_plots(tmp_path, "d-b-a-s-2", (2,))
    rep = representative_plots(tmp_path, runs)
    assert rep is not None and rep["run"] == "d-b-a-s-2" and rep["epoch"] == 2
    assert list(rep["seeds"]) == ["d-b-a-s-2"]
    rep = representative_plots(tmp_path, runs[2:])
    assert rep is not None and list(rep["seeds"]) == ["d-b-c-s-1", "d-b-c-s-2"]
    assert representative_plots(tmp_path / "none", runs) is None

