"""A suite of hostile and careless params: every one is refused by the validator with its dotted
key (before any stage computes anything — tests/pipeline/test_stage_validation.py runs each stage
on a bad file; here a few of these run through a stage too)."""

from __future__ import annotations

import hashlib
import os
import re
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


def _arch(**overrides):  # noqa: ANN003, ANN202
    """A from-scratch minilm with these architecture overrides."""
    def edit(raw: dict) -> None:
        raw["text"]["encoders"]["minilm"].update(random_init=True, overrides=overrides)
    return edit


ARCH = "text.encoders.minilm.overrides"
INF, NAN = float("inf"), float("nan")
CASES = {
    # types
    "epochs as text": (_set("training.epochs", "ten"), "training.epochs"),
    "lr as list": (_set("training.lr", [1e-3]), "training.lr"),
    "compile as 'yes'": (_set("training.compile", "yes"), "training.compile"),
    "bool as 1": (_set("training.channels_last", 1), "training.channels_last"),
    "seeds as a number": (_set("study.seeds", 3), "study.seeds"),
    "epochs as true": (_set("training.epochs", True), "training.epochs"),   # was read as 1
    "lr as yes": (_set("training.lr", yaml.safe_load("yes")), "training.lr"),   # as 1.0
    "threads as false": (_set("text.training.threads", False), "text.training.threads"),
    # booleans inside lists (were read as 1 or 0)
    "seeds [true]": (_set("study.seeds", [True]), "study.seeds.0"),
    "checkpoint_epochs [true]": (_set("training.checkpoint_epochs", [True]),
                                 "training.checkpoint_epochs.0"),
    "recall_ks [yes, 5]": (_set("evaluation.recall_ks", [yaml.safe_load("yes"), 5]),
                           "evaluation.recall_ks.0"),
    "probe seeds [false]": (_set("evaluation.probe.seeds", [False]), "evaluation.probe.seeds.0"),
    "text seeds [true, 2]": (_set("text.study.seeds", [2, True]), "text.study.seeds.1"),
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
    "seed 2**70": (_set("study.seeds", [2**70]), "study.seeds.0"),
    "negative seed": (_set("study.seeds", [-1]), "study.seeds.0"),
    "split seed 2**70": (_set("datasets.digits.split_seed", 2**70), "datasets.digits.split_seed"),
    "max_length 10**6": (_set("text.training.max_length", 10**6), "text.training.max_length"),
    # finite but absurd (were accepted, then trained on garbage or overflowed late)
    "lr 1e300": (_set("training.lr", 1e300), "training.lr"),
    "weight_decay 1e300": (_set("training.weight_decay", 1e300), "training.weight_decay"),
    "subnormal tau": (_set("schedules.fixed_t02.tau", 1e-320), "schedules.fixed_t02.tau"),
    "noise_std 1e300": (_set("datasets.digits.augment.noise_std", 1e300),
                        "datasets.digits.augment.noise_std"),
    "translate_px 1e30": (_set("datasets.digits.augment.translate_px", 1e30),
                          "datasets.digits.augment.translate_px"),
    "knn temperature 1e-320": (_set("evaluation.knn.temperature", 1e-320),
                               "evaluation.knn.temperature"),
    "text lr 1e300": (_set("text.training.lr", 1e300), "text.training.lr"),
    "probe weight_decay 1e300": (_set("evaluation.probe.weight_decay", 1e300),
                                 "evaluation.probe.weight_decay"),
    "a title with a newline": (_set("report.title", "ok\n## injected heading"), "report.title"),
    "duplicate recall_ks": (_set("evaluation.recall_ks", [1, 5, 5]), "evaluation.recall_ks"),
    "duplicate stability_qs": (_set("tails.pot.stability_qs", [0.99, 0.99]),
                               "tails.pot.stability_qs"),
    # unbounded work (ran until killed)
    "probe epochs 10**9": (_set("evaluation.probe.epochs", 10**9), "evaluation.probe.epochs"),
    "few_labels draws 10**9": (_set("evaluation.few_labels.draws", 10**9),
                               "evaluation.few_labels.draws"),
    "lrt_replicates 10**9": (_set("tails.link.lrt_replicates", 10**9),
                             "tails.link.lrt_replicates"),
    "cv_folds 10**5": (_set("tails.link.cv_folds", 10**5), "tails.link.cv_folds"),
    "pot bootstrap 10**9": (_set("tails.pot.bootstrap", 10**9), "tails.pot.bootstrap"),
    "allocation subsets 10**9": (_set("tails.allocation.subsets", 10**9),
                                 "tails.allocation.subsets"),
    # cross-references inside a section
    "checkpoint beyond epochs": (_set("training.checkpoint_epochs", [10**6]),
                                 "training.checkpoint_epochs"),
    "warmup beyond epochs": (_set("training.warmup_epochs", 10**6), "training.warmup_epochs"),
    "duplicate split seeds": (_set("evaluation.split_seeds", [1, 1]), "evaluation.split_seeds"),
    "duplicate probe seeds": (_set("evaluation.probe.seeds", [2, 2]), "evaluation.probe.seeds"),
    "duplicate study seeds": (_set("study.seeds", [1, 1]), "study.seeds"),
    "text losses []": (_set("text.study.losses", []), "text.study.losses"),
    "text warmup beyond max_steps": (lambda r: (_set("text.training.max_steps", 10)(r),
                                                _set("text.training.warmup_steps", 50)(r)),
                                     "text.training.warmup_steps"),
    "text checkpoint beyond max_steps": (lambda r: (_set("text.training.max_steps", 10)(r),
                                                    _set("text.training.checkpoint_steps",
                                                         [5, 500])(r)),
                                         "text.training.checkpoint_steps[1]"),
    "text seeds []": (_set("text.study.seeds", []), "text.study.seeds"),
    # names
    "loss name with a space": (_set("study.losses", ["infonce", "a b"]), "study.losses.1"),
    "loss name with ;": (_set("study.losses", ["x;touch PWNED;#"]), "study.losses.0"),
    "dataset name ../../..": (_set("study.datasets", ["../../.."]), "study.datasets.0"),
    "study loss not defined": (_set("study.losses", ["nope"]), "study.losses[0]"),
    "text encoder not defined": (_set("text.study.encoders", ["nope"]),
                                 "text.study.encoders[0]"),
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
    # encoder architecture (transformers' own errors carry no key; a size can exhaust memory)
    "hidden 33 over 2 heads": (_arch(hidden_size=33, num_attention_heads=2),
                               f"{ARCH}.hidden_size"),
    "intermediate 10**9": (_arch(intermediate_size=10**9), f"{ARCH}.intermediate_size"),
    "layers -1": (_arch(num_hidden_layers=-1), f"{ARCH}.num_hidden_layers"),
    "hidden without heads": (_arch(hidden_size=64), ARCH),
    "unknown architecture key": (_arch(vocab_sizee=7), f"{ARCH}.vocab_sizee"),
    "dropout 1.5": (_arch(hidden_dropout_prob=1.5), f"{ARCH}.hidden_dropout_prob"),
    # a package source must ship a model folder (found, never imported)
    "package:os": (_set("text.encoders.minilm.source", "package:os"),
                   "text.encoders.minilm.source"),
    "package:json": (_set("text.encoders.minilm.source", "package:json"),
                     "text.encoders.minilm.source"),
    "package:a.b": (_set("text.encoders.minilm.source", "package:a.b"),
                    "text.encoders.minilm.source"),
    # hub pins
    "hub without commits": (_set("text.datasets.wiki1m_stsb.via", "hub"),
                            "text.datasets.wiki1m_stsb"),
    # schedules whose τ leaves [1e-4, 1e4] somewhere on the run (computed over every step)
    "log β overflows to τ = 0": (_set("schedules.log_anneal.c", 1e308), "schedules.log_anneal"),
    "log β beyond 1e4 late in the run": (_set("schedules.log_anneal.c", 2000.0),
                                         "schedules.log_anneal"),
    "β0 near zero, τ astronomical": (_set("schedules.log_anneal", {
        "kind": "linear_beta", "beta0": 1e-300}), "schedules.log_anneal"),
    "linear β reaches beta_max 1e6": (_set("schedules.log_anneal", {
        "kind": "linear_beta", "rate": 1e4}), "schedules.log_anneal"),
    "geometric β reaches beta_max": (_set("schedules.log_anneal", {
        "kind": "geometric_beta", "rate": 10.0}), "schedules.log_anneal"),
    "sqrt β reaches beta_max": (_set("schedules.log_anneal", {
        "kind": "sqrt_beta", "rate": 1e5}), "schedules.log_anneal"),
    "step τ 1e-300": (_set("schedules.fixed_t02", {"kind": "step", "taus": [0.5, 1e-300],
                                                    "milestones_epochs": [2]}),
                      "schedules.fixed_t02.taus.1"),
    "cosine tau_min 1e-9": (_set("schedules.cosine.tau_min", 1e-9), "schedules.cosine.tau_min"),
    # names that would become absurd file names
    "a 300-letter loss name": (lambda r: r["losses"].update({"a" * 300: r["losses"]["infonce"]}),
                               "losses"),
    "a 49-letter name in a study list": (_set("study.losses", ["b" * 49]), "study.losses.0"),
    "a schedule named a-b": (lambda r: r["schedules"].update({"a-b": {"kind": "fixed"}}),
                             "schedules"),
    "an absolute path as a dataset name": (_set("study.datasets", ["/tmp/x"]),
                                           "study.datasets.0"),
    # sources outside the repository
    "encoder source ../../etc": (_set("text.encoders.minilm.source", "../../etc"),
                                 "text.encoders.minilm.source"),
    "encoder source /etc": (_set("text.encoders.minilm.source", "/etc"),
                            "text.encoders.minilm.source"),
    "encoder source ~/models": (_set("text.encoders.minilm.source", "~/models"),
                                "text.encoders.minilm.source"),
    "imagenet32 root /data": (lambda r: r["datasets"].update(
        {"inet": {"kind": "imagenet32", "root": "/data/imagenet32"}}), "datasets.inet.root"),
    "imagenet32 root ../x": (lambda r: r["datasets"].update(
        {"inet": {"kind": "imagenet32", "root": "../imagenet32"}}), "datasets.inet.root"),
    # keys that are no names
    "a list as a key": (lambda r: r["training"].update({("a", "b"): 1}), "training"),
    "true as a key": (lambda r: r["training"].update({True: 1}), "training"),
    "a number as a top-level key": (lambda r: r.update({7: 1}), "the top level"),
    # cross-references, against the datasets' published facts
    "primary metric not declared": (_set("primary.metrics", ["few.nope"]), "primary.metrics.0"),
    "few-label draws above the rarest class": (_set("evaluation.few_labels.per_class", 106),
                                               "evaluation.few_labels.per_class"),
    "val_fraction leaves no validation item": (_set("evaluation.val_fraction", 0.005),
                                               "evaluation.val_fraction"),
    "batch above the training images": (_set("training.batch_size", 1798),
                                        "training.batch_size"),
    "a run of more steps than the loop precomputes": (lambda r: (
        _set("training.batch_size", 2)(r), _set("training.epochs", 100_000)(r)),
        "training.epochs"),
    "text max_steps past a run's steps": (_set("text.training.max_steps", 10**8),
                                          "text.training.max_steps"),
    "primary contrast twice": (lambda r: r["primary"]["comparisons"].append(
        {"treatment": "weince", "reference": "infonce"}), "primary.comparisons[1]"),
    "primary contrast reversed": (lambda r: r["primary"]["comparisons"].append(
        {"treatment": "infonce", "reference": "weince"}), "primary.comparisons[1]"),
    "text length past the position embeddings": (lambda r: (
        _arch(max_position_embeddings=64)(r), _set("text.training.max_length", 128)(r)),
        "text.training.max_length"),
    # text that would change the page
    "a title with a tab": (_set("report.title", "a\tb"), "report.title"),
    "a title with an escape": (_set("report.title", "a\x1b[2Jb"), "report.title"),
}


def _names_key(message: str, key: str) -> bool:
    """``key`` begins one of the message's problem lines, whole (``study.seeds``, not a longer
    key that starts with it, nor the key's text somewhere in a value)."""
    return re.search(rf"^  - {re.escape(key)}(?=[ :])", message, re.M) is not None


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_params_are_refused_with_their_key(raw, config_error, case) -> None:
    edit, key = CASES[case]
    edit(raw)
    message = config_error(raw)
    assert _names_key(message, key), message


def _numbers(node, at: tuple = ()) -> list[tuple]:  # noqa: ANN001
    """The path of every number in params.yaml (list items included)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _numbers(v, (*at, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _numbers(v, (*at, i))]
    return [at] if isinstance(node, int | float) and not isinstance(node, bool) else []


RAW = yaml.safe_load((Path(__file__).parents[2] / "params.yaml").read_text())  # read once
NUMBERS = _numbers(RAW)


@pytest.mark.parametrize("at", NUMBERS, ids=lambda at: ".".join(map(str, at)))
def test_every_number_refuses_a_boolean_an_infinity_and_text(config_error, at) -> None:
    """Booleans wherever a number goes (inside lists too), `.inf`, `-.inf` and a word: each
    refused at its own key, for every number params.yaml holds."""
    import copy

    key = ".".join(map(str, at))
    for value in (True, False, INF, -INF, "ten"):
        broken = copy.deepcopy(RAW)
        node = broken
        for k in at[:-1]:
            node = node[k]
        node[at[-1]] = value
        message = config_error(broken)
        listed = ".".join(map(str, at[:-1])) + f"[{at[-1]}]" if isinstance(at[-1], int) else key
        assert _names_key(message, key) or _names_key(message, listed), (value, message)


def test_the_suite_holds_enough_distinct_cases() -> None:
    assert len(CASES) + 5 * len(NUMBERS) >= 200


def test_duplicate_yaml_keys_are_refused_with_the_line(tmp_path: Path) -> None:
    from infonce_lab.params import ConfigError, load_params

    (tmp_path / "p.yaml").write_text("study:\n  seeds: [1]\ntraining: {}\nstudy:\n  seeds: [2]\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'study' \(line 4\)"):
        load_params(tmp_path / "p.yaml")


def _run_stage(tmp_path: Path, repo_root: Path, params_text: str) -> subprocess.CompletedProcess:
    """The aggregate stage on ``params_text`` over a previous output; asserts the output and the
    folder are as they were."""
    (tmp_path / "params.yaml").write_text(params_text)
    out = tmp_path / "reports/summary.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("previous")
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    proc = subprocess.run([sys.executable, str(repo_root / "stages/aggregate.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src")})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml", "reports"]
    return proc


# One case of each way a refusal is phrased (pydantic's type and bound errors, a validator's
# own key, an unknown key, a validator's message, a pattern in words, a facts-derived bound); the
# other cases share these paths through the stage, and each subprocess costs ≈ 2 s.
STAGE_CASES = ["compile as 'yes'", "epochs 10**12", "checkpoint beyond epochs",
               "unknown top-level key", "package:os", "a schedule named a-b",
               "few-label draws above the rarest class"]


@pytest.mark.parametrize("case", STAGE_CASES)
def test_a_stage_refuses_them_before_any_work(tmp_path: Path, repo_root, raw, case) -> None:
    edit, key = CASES[case]
    edit(raw)
    proc = _run_stage(tmp_path, repo_root, yaml.safe_dump(raw))
    assert _names_key(proc.stderr, key), proc.stderr[-2000:]


@pytest.mark.parametrize(("text", "expected"), [
    ("study:\n  seeds: [1\ntraining: {}\n", "line 3"),                       # YAML syntax
    ("study:\n  seeds: [1]\ntraining: {}\nstudy:\n  seeds: [2]\n",
     "duplicate key 'study' (line 4)"),
])
def test_a_stage_refuses_a_broken_yaml_file(tmp_path: Path, repo_root, text: str,
                                            expected: str) -> None:
    proc = _run_stage(tmp_path, repo_root, text)
    assert "params.yaml" in proc.stderr and expected in proc.stderr, proc.stderr[-2000:]


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
