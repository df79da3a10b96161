"""Work estimates: a stage's last time (or its kind's) scaled by its marked counts, refused past
the limit with the count that grew the most (params/work.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infonce_lab.params import ConfigError, parse_params
from infonce_lab.params.work import (
    check_work,
    counts,
    estimate,
    estimates,
    scaled,
    stage_counts,
)


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
    e = scaled(p, "evaluate@digits", record)
    assert e.seconds == pytest.approx(20.0 * 3 * 0.5)
    assert (e.key, e.ratio) == ("evaluation.probe.epochs", 3.0)
    assert scaled(p, "evaluate@digits", {"seconds": 20.0}) is None   # timed before counts


def test_a_stage_never_timed_is_scaled_from_the_slowest_of_its_kind(raw, tmp_path):
    raw["training"]["epochs"] = 60
    p = parse_params(raw)
    _record(tmp_path, "pretrain@digits-r-a-f", 10.0, {"training.epochs": 30})
    _record(tmp_path, "pretrain@digits-r-b-f", 40.0, {"training.epochs": 20})
    _record(tmp_path, "simulate@gibbs", 1e6, {"simulation.gibbs.n_gibbs": 1})
    (tmp_path / "broken.json").write_text("{")                      # advice, not an error
    from infonce_lab.params.work import records

    timed = records(tmp_path)
    new = estimate(p, "pretrain@digits-r-new-f", timed)
    assert (new.basis, new.seconds, new.key) == ("pretrain@digits-r-b-f", 120.0, "training.epochs")
    own = estimate(p, "pretrain@digits-r-a-f", timed)             # its own record comes first
    assert (own.basis, own.seconds) == ("pretrain@digits-r-a-f", 20.0)
    assert estimate(p, "simulate@s1", timed) is None               # experiments differ: no kin
    assert estimate(p, "pretrain_primary@digits-r-a-f", timed) is None


def test_the_committed_timings_give_every_stage_of_a_new_study_an_estimate(raw, repo_root,
                                                                           monkeypatch):
    raw["study"]["losses"] = ["infonce_topm"]                      # run ids never timed
    raw["study"]["seeds"] = [7, 8, 9]
    raw["training"]["epochs"] = 100_000
    p = parse_params(raw)
    timings = repo_root / "reports/timings"
    found = {e.stage: e for e in estimates(p, timings)}
    counted = {s for s in p.stage_names() if stage_counts(p, s)}
    assert counted <= set(found), counted - set(found)
    every = {k.lstrip(".") for k in counts(p, "")}                  # each marked count is seen
    assert every == {k for s in counted for k in stage_counts(p, s)}
    slowest = max(json.loads(f.read_text())["seconds"] for f in timings.glob("pretrain@*.json"))
    new = found["pretrain@digits-resnet_digits-infonce_topm-fixed_t02"]
    assert new.basis != new.stage
    assert new.seconds == pytest.approx(slowest * 100_000 / 60 * 3 / 2)   # by hand: epochs, seeds
    monkeypatch.setenv("INFONCE_LAB_MAX_STAGE_HOURS", "1")
    with pytest.raises(ConfigError, match=r"training.epochs = 100,000: the pretrain@digits-\S+-"
                                          r"infonce_topm-\S+ stage would run ≈ [\d.,]+ (h|days) .* against "
                                          r"pretrain@\S+'s"):
        check_work(p, timings, new.stage)


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


def test_a_count_set_to_zero_or_unset_does_not_blind_the_estimate(raw):
    raw["tails"]["link"]["lrt_replicates"] = 0          # allowed: no LRT replicates
    raw["tails"]["link"]["bootstrap"] = 400
    p = parse_params(raw)
    record = {"seconds": 10.0, "work": {"tails.link.lrt_replicates": 39,
                                       "tails.link.bootstrap": 100}}
    e = scaled(p, "diagnose@digits", record)
    assert e.seconds == pytest.approx(10.0 * (1 / 39) * 4)   # the zero count scales as one
    raw["text"]["training"]["max_steps"] = None        # to the corpus's end: not a count
    p = parse_params(raw)
    assert scaled(p, "text_pretrain@a-b-c-d",
                  {"seconds": 5.0, "work": {"text.training.max_steps": 10}}) is None
