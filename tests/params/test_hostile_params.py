"""A suite of hostile and careless params: every one is refused by the validator with its dotted
key (before any stage computes anything — tests/pipeline/test_stage_validation.py runs each stage
on a bad file; here a few of these run through a stage too)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml


def _set(path: str, value):  # noqa: ANN202
    keys = path.split(".")

    def edit(raw: dict) -> None:
        node = raw
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return edit


INF, NAN = float("inf"), float("nan")
CASES = {
    # types
    "epochs as text": (_set("training.epochs", "ten"), "training.epochs"),
    "lr as list": (_set("training.lr", [1e-3]), "training.lr"),
    "compile as 'yes'": (_set("training.compile", "yes"), "training.compile"),
    "bool as 1": (_set("training.channels_last", 1), "training.channels_last"),
    "seeds as a number": (_set("study.seeds", 3), "study.seeds"),
    # non-finite numbers
    "tau .inf": (_set("schedules.fixed_t02.tau", INF), "schedules.fixed_t02.tau"),
    "tau .nan": (_set("schedules.fixed_t02.tau", NAN), "schedules.fixed_t02.tau"),
    "lr .inf": (_set("training.lr", INF), "training.lr"),
    "text lr .inf": (_set("text.training.lr", INF), "text.training.lr"),
    # bounds
    "epochs 10**12": (_set("training.epochs", 10**12), "training.epochs"),
    "threads 100000": (_set("training.threads", 100_000), "training.threads"),
    "text threads 0": (_set("text.training.threads", 0), "text.training.threads"),
    "batch 10**9": (_set("training.batch_size", 10**9), "training.batch_size"),
    "seed 2**70": (_set("study.seeds", [2**70]), "study.seeds"),
    "negative seed": (_set("study.seeds", [-1]), "study.seeds"),
    "split seed 2**70": (_set("datasets.digits.split_seed", 2**70), "datasets.digits.split_seed"),
    "max_length 10**6": (_set("text.training.max_length", 10**6), "text.training.max_length"),
    # cross-references inside a section
    "checkpoint beyond epochs": (_set("training.checkpoint_epochs", [10**6]),
                                 "training.checkpoint_epochs"),
    "warmup beyond epochs": (_set("training.warmup_epochs", 10**6), "training.warmup_epochs"),
    "duplicate split seeds": (_set("evaluation.split_seeds", [1, 1]), "evaluation.split_seeds"),
    "duplicate probe seeds": (_set("evaluation.probe.seeds", [2, 2]), "evaluation.probe.seeds"),
    "duplicate study seeds": (_set("study.seeds", [1, 1]), "study.seeds"),
    "text losses []": (_set("text.study.losses", []), "text.study.losses"),
    "text seeds []": (_set("text.study.seeds", []), "text.study.seeds"),
    # names
    "loss name with a space": (_set("study.losses", ["infonce", "a b"]), "study.losses"),
    "loss name with ;": (_set("study.losses", ["x;touch PWNED;#"]), "study.losses"),
    "dataset name ../../..": (_set("study.datasets", ["../../.."]), "study.datasets"),
    "study loss not defined": (_set("study.losses", ["nope"]), "study.losses"),
    "text encoder not defined": (_set("text.study.encoders", ["nope"]), "text.study.encoders"),
    # unknown keys
    "unknown top-level key": (_set("foo", 1), "foo"),
    "unknown training key": (_set("training.epoch", 3), "training.epoch"),
    # the launcher
    "launcher with ;": (_set("training.launcher", "torchrun; touch X #"), "training.launcher"),
    "launcher with $()": (_set("training.launcher", "torchrun --x=$(id)"), "training.launcher"),
    # URLs
    "file:// URL": (_set("text.datasets.wiki1m_stsb.wiki_url", "file:///etc/passwd"),
                    "text.datasets.wiki1m_stsb.wiki_url"),
    "plain http URL": (_set("text.datasets.wiki1m_stsb.stsb_url", "http://example.com/x.gz"),
                       "text.datasets.wiki1m_stsb.stsb_url"),
    # hub pins
    "hub without commits": (_set("text.datasets.wiki1m_stsb.via", "hub"),
                            "text.datasets.wiki1m_stsb"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_params_are_refused_with_their_key(raw, config_error, case) -> None:
    edit, key = CASES[case]
    edit(raw)
    assert key in config_error(raw)


def test_duplicate_yaml_keys_are_refused_with_the_line(tmp_path: Path) -> None:
    from infonce_lab.params import ConfigError, load_params

    (tmp_path / "p.yaml").write_text("study:\n  seeds: [1]\ntraining: {}\nstudy:\n  seeds: [2]\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'study' \(line 4\)"):
        load_params(tmp_path / "p.yaml")


@pytest.mark.parametrize("case", ["tau .inf", "compile as 'yes'", "seed 2**70",
                                  "checkpoint beyond epochs", "text losses []"])
def test_a_stage_refuses_them_before_any_work(tmp_path: Path, repo_root, raw, case) -> None:
    edit, key = CASES[case]
    edit(raw)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "reports/summary.json"
    out.parent.mkdir(parents=True)
    out.write_text("previous")
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    proc = subprocess.run([sys.executable, str(repo_root / "stages/aggregate.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src")})
    assert proc.returncode == 2 and key in proc.stderr and "Traceback" not in proc.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml", "reports"]


def _sections(raw: dict) -> list[tuple[str, dict]]:
    return [("datasets", raw["datasets"]), ("backbones", raw["backbones"]),
            ("losses", raw["losses"]), ("schedules", raw["schedules"]),
            ("text.datasets", raw["text"]["datasets"]), ("text.encoders", raw["text"]["encoders"])]


def test_every_shipped_entry_is_named_in_its_errors(raw, config_error) -> None:
    """An entry named like a kind tag (``schedules.cosine``, ``datasets.digits``) keeps its name in
    the error's location: every shipped entry, one bad kind and one unknown key each."""
    import copy

    for section, entries in _sections(raw):
        for name in entries:
            for field, value in (("kind", "no_such_kind"), ("no_such_key", 1)):
                broken = copy.deepcopy(raw)
                dict(_sections(broken))[section][name][field] = value
                assert f"{section}.{name}.{field}" in config_error(broken), (section, name, field)
