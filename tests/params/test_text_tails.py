"""text.tails: each inconsistency names its key before any stage runs."""

from __future__ import annotations

import copy

import pytest

from infonce_lab.params import parse_params


@pytest.mark.parametrize(("edit", "key"), [
    (lambda t: t.update(encoders=["nope"]), "text.tails.encoders[0]"),
    (lambda t: t.update(crop=[0.9, 0.5]), "text.tails.crop"),
    (lambda t: t.update(word_dropout=1.0), "text.tails.word_dropout"),
    (lambda t: t.update(batch_size=1), "text.tails.batch_size"),
    # the ablations' sizes (tails:) must fit the text bank too: 2·8 − 2 = 14 negatives
    (lambda t: t.update(encoders=["minilm"], batch_size=8), "tails.ablations.hardness_ks[0]"),
    (lambda t: t.update(encoders=["minilm"], batches=1, batch_size=128),
     "tails.ablations.pool_sizes[6]"),  # 256 > 2·128 − 2 = 254
])
def test_bad_text_tails_name_their_key(raw, config_error, edit, key):
    broken = copy.deepcopy(raw)
    edit(broken["text"]["tails"])
    assert key in config_error(broken)


def test_the_default_diagnoses_no_encoder_and_minilm_is_accepted(raw):
    assert parse_params(raw).text.tails.encoders == []
    on = copy.deepcopy(raw)
    on["text"]["tails"]["encoders"] = ["minilm"]
    assert parse_params(on).text.tails.encoders == ["minilm"]


def test_the_text_power_profile_sets_five_seeds_and_the_minilm_tails(tmp_path, repo_root):
    import yaml

    from infonce_lab.devtools.profiles import apply

    params = tmp_path / "params.yaml"
    params.write_text((repo_root / "params.yaml").read_text())
    (tmp_path / "dvc.yaml").write_text((repo_root / "dvc.yaml").read_text())
    apply("text_power", params, repo_root / "profiles")
    p = parse_params(yaml.safe_load(params.read_text()))
    assert p.text.study.seeds == [1, 2, 3, 4, 5] and p.text.tails.encoders == ["minilm"]
    assert len(p.text_runs()) == 5 * len(p.text.study.losses)
    assert p.study == parse_params(yaml.safe_load((repo_root / "params.yaml").read_text())).study
