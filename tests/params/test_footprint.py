"""Sizes that cannot fit are refused from params, with the key and the estimate, before compute.

The estimates are checked against measurement (tracemalloc peaks of the NumPy code they describe,
autograd's saved tensors of a real forward pass), their scaling against the closed forms, and
the refusal through a stage (exit 2, the key, nothing written) and the CPU pretrain check.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from infonce_lab.models.footprint import _saved_bytes, training_activation_bytes
from infonce_lab.params import ConfigError, ResNetConfig, parse_params
from infonce_lab.params.footprint import GIB, check_memory, footprints, machine_bytes


def _params(raw: dict):  # noqa: ANN202
    return parse_params(raw, "params.yaml")


def _one(p, key: str):  # noqa: ANN001, ANN202
    return next(f for f in footprints(p) if f.key == key)


def _peak(fn) -> int:  # noqa: ANN001
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_s1_grid_estimate_matches_the_measured_peak(raw):
    from infonce_lab.simulation.barriers import s1_barrier
    from infonce_lab.simulation.circle import s1_model
    from infonce_lab.simulation.s1 import gibbs_trap_mass

    n = 48
    raw["simulation"]["s1"]["grid"] = n

    def run() -> None:
        barrier = s1_barrier(n, 20.0, 1.0)
        labels = barrier.f_result.labels
        ang = barrier.f_result.minima_index * (2.0 * math.pi / n)
        trap = (s1_model(1.0).u0(np.c_[np.zeros(len(ang)), ang]) > 1e-6)[labels]
        gibbs_trap_mass(30.0, trap, 1.0)

    measured = _peak(run)
    estimate = _one(_params(raw), "simulation.s1.grid").bytes
    assert 0.6 < estimate / measured < 1.5, (estimate, measured)


def test_the_allocation_estimate_matches_the_measured_peak(raw):
    from infonce_lab.tails.allocation import gradient_allocation

    a, s, n, k = 128, 10, 256, 31
    raw["tails"]["allocation"].update(anchors=a, subsets=s, pool=n, k=k)
    rng = np.random.default_rng(0)
    s_pos, bank = rng.uniform(0.3, 0.9, a), rng.uniform(-0.5, 0.9, (a, n))
    measured = _peak(lambda: gradient_allocation(s_pos, bank, k=k, subsets=s, tau=0.5,
                                                 beta=4.0, per_anchor=True))
    estimate = _one(_params(raw), "tails.allocation.pool").bytes
    assert 0.6 < estimate / measured < 1.5, (estimate, measured)


def test_estimates_scale_as_their_closed_forms(raw):
    small = _params(raw)
    raw["simulation"]["s1"]["grid"] *= 2
    raw["training"]["batch_size"] *= 2
    raw["simulation"]["negatives"]["n_pairs"] = [2, 40]
    big = _params(raw)
    assert _one(big, "simulation.s1.grid").bytes == 8 * _one(small, "simulation.s1.grid").bytes
    assert _one(big, "training.batch_size").bytes == 4 * _one(small, "training.batch_size").bytes
    assert _one(big, "simulation.negatives.n_pairs").bytes == 16 * 40**2 * 79**2


def test_the_activation_estimate_equals_the_saved_tensors_of_the_full_batch():
    """Extrapolated from 2 and 4 images; exact at the full batch (every activation is linear in
    it), and the caller's random stream is untouched."""
    cfg = ResNetConfig(widths=[8, 16], blocks=[1, 1], head_hidden=16, head_dim=8)
    from infonce_lab.models import build_encoder

    torch.manual_seed(3)
    expected_next = torch.rand(1)
    torch.manual_seed(3)
    estimate = training_activation_bytes(cfg, 3, 16, 24)
    assert torch.equal(torch.rand(1), expected_next)
    real = _saved_bytes(build_encoder(cfg, 3, 16).train(), torch.zeros(24, 3, 16, 16))
    assert estimate == real
    assert estimate == _meta_saved_bytes(cfg, 3, 16, 24)


def _meta_saved_bytes(cfg, channels: int, size: int, views: int) -> int:  # noqa: ANN001
    """An independent count: the same forward on the meta device (no data at all), storages
    told apart by their C handle (every meta data_ptr is 0)."""
    from infonce_lab.models import build_encoder

    enc = build_encoder(cfg, channels, size).to("meta").train()
    weights = {q.untyped_storage()._cdata for q in enc.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st._cdata not in weights:
            seen[st._cdata] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        enc(torch.empty(views, channels, size, size, device="meta"))
    return sum(seen.values())


def test_text_training_memory_is_held_against_the_text_device(raw):
    raw["text"]["training"]["batch_size"] = 2**16   # 25·(2^16)² B ≈ 100 GiB: a GPU's, not ours
    raw["text"]["training"]["device"] = "cuda"
    raw["training"]["device"] = "cpu"
    check_memory(_params(raw), stage="text_pretrain@x", limit=24 * GIB)
    raw["text"]["training"]["device"] = "cpu"
    with pytest.raises(ConfigError, match=r"text\.training\.batch_size = 65536"):
        check_memory(_params(raw), stage="text_pretrain@x", limit=24 * GIB)


def test_sizes_beyond_the_machine_are_refused_with_the_key(raw):
    raw["simulation"]["s1"]["grid"] = 4096        # 88·4096³ B ≈ 5.5 TiB
    with pytest.raises(ConfigError, match=r"simulation\.s1\.grid = 4096: .* ≈ 5\.5 TiB"):
        check_memory(_params(raw))
    # Only the stage that allocates it refuses it under dvc repro.
    check_memory(_params(raw), stage="simulate@gibbs")
    check_memory(_params(raw), stage="evaluate@digits")
    with pytest.raises(ConfigError, match=r"simulation\.s1\.grid"):
        check_memory(_params(raw), stage="simulate@s1")


def _on_stl10(raw: dict) -> None:
    """A study of STL-10 with its unlabeled split only (105,000 training images: room for the
    batches below)."""
    raw["datasets"]["stl"] = {"kind": "stl10", "with_unlabeled": True}
    raw["study"]["datasets"] = ["stl"]
    raw["primary"]["seeds"] = []


def test_a_training_batch_is_held_against_the_accelerator_off_the_cpu(raw):
    _on_stl10(raw)
    raw["training"]["batch_size"] = 2**16          # 25·(2^17)² B ≈ 400 GiB
    raw["training"]["device"] = "cuda"
    with pytest.raises(ConfigError, match=r"training\.batch_size = 65536: .*any accelerator"):
        check_memory(_params(raw), limit=24 * GIB)
    raw["training"]["batch_size"] = 2**14          # 27 GiB: beyond this host, within a GPU's
    check_memory(_params(raw), limit=24 * GIB)
    raw["training"]["device"] = "cpu"
    with pytest.raises(ConfigError, match=r"this machine \(24\.0 GiB"):
        check_memory(_params(raw), limit=24 * GIB)


def test_the_user_budget_lowers_the_limit(monkeypatch):
    monkeypatch.setenv("INFONCE_LAB_MEMORY_GIB", "1.5")
    assert machine_bytes() == int(1.5 * GIB)
    monkeypatch.setenv("INFONCE_LAB_MEMORY_GIB", "lots")
    with pytest.raises(ConfigError, match="INFONCE_LAB_MEMORY_GIB"):
        machine_bytes()


def test_the_default_study_fits_a_small_machine(raw):
    """The shipped params need well under the 2-core, 24 GiB machines they are timed on."""
    assert max(f.bytes for f in footprints(_params(raw))) < GIB


def test_a_simulation_stage_refuses_before_any_work(tmp_path: Path, repo_root, raw):
    raw["simulation"]["s1"]["grid"] = 4096
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    proc = subprocess.run([sys.executable, str(repo_root / "stages/simulate.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src"),
                               "DVC_STAGE": "simulate@s1"})
    assert proc.returncode == 2 and "simulation.s1.grid = 4096" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_cpu_pretraining_refuses_a_batch_whose_activations_cannot_fit(raw, monkeypatch):
    from infonce_lab.pipeline.pretrain import check_training_memory

    raw["training"]["device"] = "cpu"
    _on_stl10(raw)
    p = _params(raw)
    run = p.runs()[0]
    check_training_memory(p, run, 1, 8)  # the default fits
    monkeypatch.setenv("INFONCE_LAB_MEMORY_GIB", "0.55")  # 50 MiB beyond the process itself
    raw["training"]["batch_size"] = 2048
    with pytest.raises(ConfigError, match=r"training\.batch_size = 2048: .* of activations"):
        check_training_memory(_params(raw), run, 1, 8)


def test_a_test_split_too_large_for_the_machine_is_named_by_its_dataset(raw):
    """ImageNet-32's 50,000 validation images: float64 uniformity needs ≈ 28 GiB."""
    raw["datasets"]["inet"] = {"kind": "imagenet32", "root": "data/imagenet32"}
    raw["study"]["datasets"] = ["digits", "inet"]
    p = _params(raw)
    with pytest.raises(ConfigError, match=r"datasets\.inet\.kind = imagenet32: the "
                                          r"evaluate@inet stage .* ≈ 27\.9 GiB .* more memory"):
        check_memory(p, stage="evaluate@inet", limit=24 * GIB)
    check_memory(p, stage="evaluate@digits", limit=24 * GIB)
    check_memory(p, stage="evaluate@inet", limit=32 * GIB)


@pytest.mark.parametrize(("layers", "hidden", "heads", "inner"), [(2, 64, 2, 128),
                                                                  (3, 256, 4, 1024)])
def test_the_encoder_estimate_is_the_bulk_of_a_real_bert(layers, hidden, heads, inner):
    # transformers' own BertModel as the reference: its layers' parameters are the closed form
    # plus biases and norms (≈ 9h + i per layer), below 5% of it at these sizes.
    from transformers import BertConfig, BertModel

    from infonce_lab.params.footprint import transformer_layer_params

    cfg = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                     intermediate_size=inner, vocab_size=100)
    with torch.device("meta"):
        model = BertModel(cfg)
    actual = sum(p.numel() for p in model.encoder.parameters())
    estimate = transformer_layer_params(layers, hidden, inner)
    assert estimate <= actual <= 1.05 * estimate


def test_a_from_scratch_encoder_too_large_for_the_machine_is_refused(raw):
    enc = raw["text"]["encoders"]["minilm"]
    enc.update(random_init=True, overrides={"num_hidden_layers": 48, "hidden_size": 4096,
                                            "num_attention_heads": 64,
                                            "intermediate_size": 16384})
    raw["text"]["training"]["device"] = "cpu"
    with pytest.raises(ConfigError, match=r"text\.encoders\.minilm\.overrides\.hidden_size = "
                                          r"4096: .* ≈ 144\.0 GiB"):
        check_memory(_params(raw), stage="text_pretrain@x", limit=24 * GIB)
    enc["overrides"] = {"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2,
                        "intermediate_size": 64}
    check_memory(_params(raw), stage="text_pretrain@x", limit=24 * GIB)
