"""summary.json["tails"]: every configuration keeps its runs' per-seed values (None and flags
included) beside the description over seeds, so the report infers over seeds on per-seed
estimates and never averages p-values or intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infonce_lab.aggregate import summarise_tails
from infonce_lab.params import load_params

REPO = Path(__file__).resolve().parents[2]


def test_per_seed_values_are_kept_with_their_runs(tmp_path: Path):
    params = load_params(REPO / "params.yaml")
    runs = params.diagnosed_runs()  # the grid, then the primary's runs of tails.primary_losses
    assert {r.loss for r in runs[len(params.grid_runs()):]} == set(params.tails.primary_losses)
    for i, run in enumerate(runs):
        record = {f"epoch_{e}": {"pot": {"xi": -0.4 - 0.01 * i - e / 1000, "endpoint": None,
                                         "endpoint_above_cap": False},
                                 "link": {"inside": {"lambda_se": None if i % 2 else 0.03,
                                                     "lambda_boundary": bool(i % 2),
                                                     "delta_by_batch": {"3": 0.01 * i}}}}
                  for e in (30, 60)}
        record["final_epoch"] = 60
        (tmp_path / "runs" / run.dataset).mkdir(parents=True, exist_ok=True)
        (tmp_path / "runs" / run.dataset / f"{run.id}.json").write_text(json.dumps(record))
    tails = summarise_tails(params, tmp_path)
    first = runs[0]
    gid = f"{first.dataset}-{first.backbone}-{first.loss}-{first.schedule}"
    g = tails[gid]
    assert g["run"] == {"dataset": first.dataset, "backbone": first.backbone,
                        "loss": first.loss, "schedule": first.schedule}
    assert g["seeds"] == list(params.study.seeds) and g["epochs"] == [30, 60]
    per = g["per_seed"]["60"]
    seeds = [str(s) for s in params.study.seeds]
    assert set(per["pot.xi"]) == set(seeds)
    assert per["pot.endpoint"] == dict.fromkeys(seeds)  # undefined stays None, per seed
    assert set(per["link.inside.lambda_boundary"].values()) <= {True, False}
    assert "link.inside.delta_by_batch.3" in per
    # the description over seeds is unchanged (numbers only)
    xi = g["by_epoch"]["60"]["pot.xi"]
    assert xi["n"] == len(seeds)
    assert xi["mean"] == pytest.approx(sum(per["pot.xi"].values()) / len(seeds))
    assert "pot.endpoint" not in g["by_epoch"]["60"]
    # the inference over seeds the report decides on: the seeds' mean, undefined as such
    from infonce_lab.evaluation.estimate import Estimate

    est = {k: Estimate.from_dict(v) for k, v in g["estimates"].items()}
    assert est["xi"].value == pytest.approx(xi["mean"]) and "t over 2 seeds" in est["xi"].note
    assert not est["endpoint_gap"].defined and "no finite endpoint" in est["endpoint_gap"].undefined
    json.dumps(g["estimates"], allow_nan=False)  # summary.json is strict JSON
    # the primary's diagnosed configuration is summarised with all its seeds
    p = params.primary
    for loss in params.tails.primary_losses:
        g = tails[f"{p.dataset}-{p.backbone}-{loss}-{p.schedule}"]
        assert g["seeds"] == list(p.seeds_of(loss))


def test_a_missing_run_file_names_the_stage(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="run the diagnose stage"):
        summarise_tails(load_params(REPO / "params.yaml"), tmp_path)
