"""Work estimates: a stage's last time scaled by its marked counts, refused past the limit with
the count that grew the most (params/work.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infonce_lab.params import ConfigError, parse_params
from infonce_lab.params.work import check_work, estimate, stage_counts


def _record(folder: Path, stage: str, seconds: float, work: dict[str, int]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stage}.json").write_text(json.dumps(
        {"stage": stage, "seconds": seconds, "work": work}))


def test_every_stage_kind_has_its_counts(raw):
    p = parse_params(raw)
    assert stage_counts(p, "evaluate@digits")["evaluation.probe.epochs"] == p.evaluation.probe.epochs
    assert stage_counts(p, "pretrain@a-b-c-d")["study.seeds"] == len(p.study.seeds)
    assert stage_counts(p, "diagnose@digits")["tails.link.lrt_replicates"] == 39
    assert stage_counts(p, "simulate@gibbs")["simulation.gibbs.n_gibbs"] == p.simulation.gibbs.n_gibbs
    assert stage_counts(p, "aggregate") == {}


def test_the_estimate_scales_the_last_time_by_each_count(raw):
    raw["evaluation"]["probe"]["epochs"] = 300
    raw["evaluation"]["few_labels"]["draws"] = 10
    p = parse_params(raw)
    record = {"seconds": 20.0, "work": {"evaluation.probe.epochs": 100,
                                        "evaluation.few_labels.draws": 20}}
    e = estimate(p, "evaluate@digits", record)
    assert e.seconds == pytest.approx(20.0 * 3 * 0.5)
    assert (e.key, e.ratio) == ("evaluation.probe.epochs", 3.0)
    assert estimate(p, "evaluate@digits", {"seconds": 20.0}) is None   # timed before counts


def test_a_count_mistyped_by_orders_of_magnitude_is_refused_with_its_key(raw, tmp_path,
                                                                         monkeypatch):
    raw["simulation"].setdefault("link_theory", {}).setdefault("plackett_luce", {})
    raw["simulation"]["link_theory"]["plackett_luce"]["trials"] = 10**11
    p = parse_params(raw)
    key = "simulation.link_theory.plackett_luce.trials"
    assert stage_counts(p, "simulate@link_theory")[key] == 10**11
    _record(tmp_path, "simulate@link_theory", 30.0, {key: 50_000})
    with pytest.raises(ConfigError, match=rf"{key} = 100,000,000,000: the "
                                          r"simulate@link_theory stage would run ≈ [\d.,]+ days"):
        check_work(p, tmp_path, "simulate@link_theory")
    check_work(p, tmp_path, "evaluate@digits")            # another stage: not refused
    monkeypatch.setenv("INFONCE_LAB_MAX_STAGE_HOURS", "1e9")
    check_work(p, tmp_path, "simulate@link_theory")       # the researcher means it


def test_a_stage_refuses_before_any_work(tmp_path: Path, repo_root, raw):
    import yaml

    raw["evaluation"]["probe"]["epochs"] = 10_000
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    _record(tmp_path / "reports/timings", "evaluate@digits", 60.0,
            {"evaluation.probe.epochs": 100})
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src"), "DVC_STAGE": "evaluate@digits",
           "INFONCE_LAB_MAX_STAGE_HOURS": "1"}
    proc = subprocess.run([sys.executable, str(repo_root / "stages/evaluate.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "evaluation.probe.epochs = 10,000" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml", "reports"]
