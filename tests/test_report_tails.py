"""The report's WEINCE tail-diagnostics section: verdict rules on synthetic summaries with known
answers, figures from synthetic plot data shaped like the diagnose stage's files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from infonce_lab.report._legacy import (
    NOT_REPRODUCED,
    REPRODUCED,
    overall_verdict,
)
from infonce_lab.report.figures import (
    allocation_shares,
    gpd_fit,
    link_ablations,
    noise_floor_curves,
    tail_figures,
    tails_over_training,
)
from infonce_lab.report.render import (
    render,
)
from infonce_lab.report.tails import (
    allocation_verdict,
    final_epoch,
    frechet_verdict,
    in_paper_range,
    link_verdict,
    noise_floor_verdict,
    pot_verdict,
    representative_plots,
    tail_table,
    tail_verdicts,
    tails_context,
    trend_verdict,
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


# ------------------------------------------------------------------------------------ verdicts
def test_final_epoch_is_the_last_one():
    tails = {"epochs": [20, 60, 40], "by_epoch": {"20": {"a": 1}, "40": {"a": 2}, "60": {"a": 3}}}
    assert final_epoch(tails) == (60, {"a": 3})


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, REPRODUCED),
    ({"pot__xi": _m(0.05)}, NOT_REPRODUCED),
    ({"pot__xi": _m(0.0)}, NOT_REPRODUCED),
    ({"pot__xi_ci_high": _m(0.01)}, "inconclusive"),
    ({"pot__xi_ci_high": None}, "inconclusive"),
    ({"pot__xi": None}, "inconclusive"),
])
def test_pot_verdict(overrides: dict[str, Any], expected: str):
    assert pot_verdict(_metrics(**overrides))["verdict"].startswith(expected)


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, REPRODUCED),  # one seed: the run's own bootstrap lower end 0.10 > 0
    ({"link__inside__delta_ci_low": _m(-0.01)}, "inconclusive"),
    ({"link__inside__delta_mean": _m(-0.02)}, NOT_REPRODUCED),
    ({"link__inside__delta_mean": _m(0.0)}, NOT_REPRODUCED),
    # seeds: the t-interval over seeds decides, not the mean of the runs' own lower ends
    ({"link__inside__delta_mean": _m(0.05, 0.03, 3),
      "link__inside__delta_ci_low": _m(-0.5, 0.1, 3)}, REPRODUCED),
    ({"link__inside__delta_mean": _m(0.05, 0.08, 3),
      "link__inside__delta_ci_low": _m(0.01, 0.1, 3)}, "inconclusive"),
    ({"link__inside__delta_mean": None}, "inconclusive"),
])
def test_link_verdict(overrides: dict[str, Any], expected: str):
    assert link_verdict(_metrics(**overrides), "inside")["verdict"].startswith(expected)


def test_link_verdict_uses_the_given_placement():
    m = _metrics(link__outside__delta_mean=_m(-0.1))
    assert link_verdict(m, "inside")["verdict"] == REPRODUCED
    assert link_verdict(m, "outside")["verdict"] == NOT_REPRODUCED


@pytest.mark.parametrize(("value", "expected"), [
    (_m(1e-9), REPRODUCED), (_m(-0.004), REPRODUCED), (_m(0.02), NOT_REPRODUCED),
    (_m(-0.02), REPRODUCED), (None, "inconclusive"),
])
def test_frechet_verdict(value: dict[str, Any] | None, expected: str):
    m = _metrics(frechet__delta_joint_vs_weibull=value)
    assert frechet_verdict(m)["verdict"].startswith(expected)


@pytest.mark.parametrize(("ablation", "sign", "rho", "expected"), [
    ("hardness", -1, -0.9, REPRODUCED), ("hardness", -1, 0.4, NOT_REPRODUCED),
    ("hardness", -1, None, "inconclusive"), ("hardness", -1, math.nan, "inconclusive"),
    ("hardness", -1, 0.0, "inconclusive"),
    ("pool", +1, 0.6, REPRODUCED), ("pool", +1, -0.3, NOT_REPRODUCED),
    ("pool", +1, None, "inconclusive"),
])
def test_trend_verdict(ablation: str, sign: int, rho: float | None, expected: str):
    m = _metrics(**{f"ablations__{ablation}_lambda_spearman": None if rho is None else _m(rho)})
    assert trend_verdict(m, ablation, sign)["verdict"].startswith(expected)


@pytest.mark.parametrize(("weibit", "softmax", "expected"), [
    (0.2, 0.4, REPRODUCED), (0.5, 0.4, NOT_REPRODUCED), (0.4, 0.4, NOT_REPRODUCED),
    (None, 0.4, "inconclusive"),
])
def test_allocation_verdict(weibit: float | None, softmax: float, expected: str):
    m = _metrics(allocation__weibit_tv_to_risk=None if weibit is None else _m(weibit),
                 allocation__softmax_tv_to_risk=_m(softmax))
    assert allocation_verdict(m)["verdict"].startswith(expected)


@pytest.mark.parametrize(("changes", "expected"), [
    ({}, REPRODUCED),
    ({"mse_weibit": [0.07, 0.007, 0.003]}, NOT_REPRODUCED),        # 4× its c/n line
    ({"mse_softmax": [0.19, 0.06, 0.01]}, NOT_REPRODUCED),         # far below its floor
    ({"mse_softmax": [0.19, 0.06, 0.0005], "softmax_floor": 0.0004}, NOT_REPRODUCED),  # below W
])
def test_noise_floor_verdict(changes: dict[str, Any], expected: str):
    assert noise_floor_verdict({**NOISE, **changes})["verdict"] == expected


def test_noise_floor_verdict_reads_the_largest_n_wherever_it_is():
    shuffled = {**NOISE, **{k: list(reversed(NOISE[k])) for k in
                            ("n", "mse_weibit", "theory_weibit", "mse_softmax")}}
    assert noise_floor_verdict(shuffled)["verdict"] == REPRODUCED


def test_overall_verdict():
    assert overall_verdict([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert overall_verdict([NOT_REPRODUCED, NOT_REPRODUCED]) == NOT_REPRODUCED
    mixed = overall_verdict([REPRODUCED, NOT_REPRODUCED, "inconclusive (x)"])
    assert mixed.startswith("inconclusive") and "1 of 3 reproduced, 1 not" in mixed
    assert overall_verdict([]).startswith("inconclusive")


def test_in_paper_range():
    assert in_paper_range(0.4, (0.33, 0.5)) == "yes"
    assert in_paper_range(0.2, (0.33, 0.5)) == "no"
    assert in_paper_range(None, (0.33, 0.5)) == "—"


def test_tail_verdicts_rows():
    tails = {"d-b-infonce-fixed": _group(_metrics()),
             "d-b-weince-fixed": _group(_metrics(pot__xi=_m(0.1)))}
    rows = tail_verdicts(tails, NOISE, "inside")
    assert all(set(r) == {"claim", "paper", "group", "ours", "verdict"} for r in rows)
    overall = [r for r in rows if r["group"] == "all"]
    assert len(overall) == 7  # six per-configuration claims and the noise floor
    assert overall[0]["claim"].startswith("POT") and overall[0]["verdict"].startswith("inconclusive")
    assert all(r["verdict"] == REPRODUCED for r in overall[1:])
    assert len(rows) == 6 * 3 + 1
    assert len(tail_verdicts(tails, None, "inside")) == 6 * 3  # no noise-floor file: no row


def test_tail_table_reads_the_final_epoch_and_each_placement():
    early = _metrics(**{"link__inside__lambda_hat": _m(0.1)})
    tails = {"d-b-l-s": {"epochs": [1, 2], "by_epoch": {"1": early, "2": _metrics()}}}
    (row,) = tail_table(tails, ["inside", "outside"])
    assert row["epoch"] == 2
    assert row["lambda"]["inside"]["mean"] == 0.40 and row["lambda"]["outside"]["mean"] == 0.9
    assert row["lambda_in_range"] == "yes" and row["delta_in_range"] == "yes"
    assert row["t_p"] == 0.01 and row["lrt_p"] == 0.025


# ------------------------------------------------------------------------------------- figures
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


def test_section_renders_in_both_formats(tmp_path: Path):
    runs = ["digits-resnet_digits-infonce-fixed_t02-1"]
    _write_plots(tmp_path, runs[0], (20, 60))
    rep = representative_plots(tmp_path, runs)
    tails = _tails()
    figures = tail_figures(tails, "inside", rep, NOISE)
    context = {"title": "t", "summary": {}, "study": {k: [] for k in ("datasets", "backbones",
                                                                     "losses", "schedules",
                                                                     "seeds", "baselines")},
               "n_runs": 1, "verdicts": [], "comparison": [], "schedules": {}, "paired": {},
               "selection": {}, "provenance": {"versions": {}, "timings": []},
               "figures": {k: "QUJD" for k in figures} | {"temperature": "", "au_plane": "",
                                                          "accuracy": "", "training": ""},
               "tails": tails_context(tails, NOISE, ["inside", "outside"], rep)}
    html, md = render(context)
    for text in (html, md):
        assert "Tail diagnostics (SPECS B)" in text
        assert "−0.45" in text or "-0.450" in text
        assert "λ̂ (outside)" in text
    assert html.count("data:image/png;base64,QUJD") == 5
    for name in ("tails_over_training", "gpd_fit", "link_ablations", "allocation", "noise_floor"):
        assert f"figures/{name}.png" in md
    context["tails"] = None
    html, md = render(context)
    assert "Tail diagnostics (SPECS B)" not in html and "Tail diagnostics (SPECS B)" not in md
