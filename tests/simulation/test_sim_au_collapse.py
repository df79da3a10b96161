"""Wang–Isola's alignment-only collapse (simulation/au_collapse.py): the estimators against closed
forms and brute force, the collapsed configuration's values, determinism for a seed, and the
three objectives at a toy size."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch
from scipy import special

from infonce_lab.losses.geometry import alignment, uniformity
from infonce_lab.params import AuCollapseConfig
from infonce_lab.simulation import au_collapse as ac
from infonce_lab.simulation import runner

# the schema's defaults, shrunk (the simulation has no defaults of its own)
TOY = AuCollapseConfig(seeds=2, steps=150, batch=48, lr=0.03, dim_in=8, hidden=16, dim_out=4,
                       clusters=4, n_eval=120).model_dump()


def _uniform_points(rng: np.random.Generator, n: int, d: int) -> torch.Tensor:
    x = rng.standard_normal((n, d))
    return torch.from_numpy(x / np.linalg.norm(x, axis=1, keepdims=True))


def test_closed_forms_on_s1_and_s2():
    assert ac.uniform_spread(2) == pytest.approx(4 / math.pi, rel=1e-12)
    assert ac.uniform_spread(3) == pytest.approx(4 / 3, rel=1e-12)
    assert ac.uniform_spread(400) == pytest.approx(math.sqrt(2), rel=1e-3)
    # S¹: log[(1/2π)∫ e^{−t(2 − 2cos θ)} dθ] = −2t + log I₀(2t)
    for t in (0.5, 2.0, 5.0):
        assert ac.uniform_uniformity(2, t) == pytest.approx(-2 * t + math.log(special.iv(0, 2 * t)),
                                                            rel=1e-12)


@pytest.mark.parametrize("d", [2, 3, 8])
def test_uniform_law_closed_forms_against_brute_force_monte_carlo(d):
    # i.i.d. uniform points: the estimators are U-statistics of the closed forms' expectations
    rng = np.random.default_rng(d)
    z = _uniform_points(rng, 3000, d)[None]
    assert float(ac.spread(z)[0]) == pytest.approx(ac.uniform_spread(d), abs=0.01)
    mc = float(ac.batched_uniformity(z, 2.0)[0])
    assert mc == pytest.approx(ac.uniform_uniformity(d, 2.0), abs=0.02)
    # and the brute force over independent pairs, no estimator of ours
    u, v = _uniform_points(rng, 400_000, d), _uniform_points(rng, 400_000, d)
    brute = math.log(float(torch.exp(-2.0 * (u - v).pow(2).sum(1)).mean()))
    assert brute == pytest.approx(ac.uniform_uniformity(d, 2.0), abs=0.01)
    assert float((u - v).norm(dim=1).mean()) == pytest.approx(ac.uniform_spread(d), abs=0.005)


def test_a_collapsed_configuration_has_uniformity_zero_and_no_spread():
    c = torch.nn.functional.normalize(torch.randn(1, 1, 5, dtype=torch.float64), dim=-1)
    z = c.expand(2, 50, 5).clone()
    assert torch.allclose(ac.batched_uniformity(z, 2.0), torch.zeros(2, dtype=z.dtype), atol=1e-12)
    assert torch.equal(ac.spread(z), torch.zeros(2, dtype=torch.float64))
    assert torch.equal(ac.batched_alignment(z, z, 2.0), torch.zeros(2, dtype=torch.float64))
    # the maximum: any spread lowers it
    assert float(ac.batched_uniformity(_uniform_points(np.random.default_rng(0), 50, 5)[None],
                                       2.0)[0]) < -1


def test_batched_estimators_match_the_project_losses_run_by_run():
    rng = np.random.default_rng(1)
    z1 = torch.stack([_uniform_points(rng, 64, 6) for _ in range(3)])
    z2 = torch.nn.functional.normalize(z1 + 0.2 * torch.randn(z1.shape, dtype=z1.dtype), dim=-1)
    for r in range(3):
        assert float(ac.batched_uniformity(z1, 2.0)[r]) == pytest.approx(
            float(uniformity(z1[r], 2.0)), abs=1e-10)
        for alpha in (2.0, 1.0):
            assert float(ac.batched_alignment(z1, z2, alpha)[r]) == pytest.approx(
                float(alignment(z1[r], z2[r], alpha)), abs=1e-10)
        full = torch.cdist(z1[r], z1[r]).sum() / (64 * 63)
        assert float(ac.spread(z1)[r]) == pytest.approx(float(full), abs=1e-10)
    # InfoNCE with negatives scored against f(y): the cross-entropy of z2·z1ᵀ/τ on the diagonal
    ce = torch.nn.functional.cross_entropy(z2[0] @ z1[0].T / 0.2, torch.arange(64))
    assert float(ac.batched_infonce(z1, z2, 0.2)[0]) == pytest.approx(float(ce), abs=1e-10)


def test_the_runner_is_declared_and_a_seed_decides_the_numbers():
    assert runner(AuCollapseConfig.RUNS) is ac.run_au_collapse
    # every knob is a schema field and nothing else; the defaults are the schema's alone
    params = inspect.signature(ac.run_au_collapse).parameters
    assert set(params) == set(AuCollapseConfig.model_fields)
    assert all(p.default is inspect.Parameter.empty for p in params.values())
    torch.set_num_threads(1)
    a, b = ac.run_au_collapse(**TOY), ac.run_au_collapse(**TOY)
    assert a == b
    c = ac.run_au_collapse(**{**TOY, "seed": 1})
    assert c["by_method"]["align_uniform"]["spread_per_seed"] != \
        a["by_method"]["align_uniform"]["spread_per_seed"]


def test_alignment_alone_collapses_and_uniformity_keeps_the_spread_at_a_toy_size():
    torch.set_num_threads(1)
    res = ac.run_au_collapse(**TOY)
    assert res["convergence"] == {"steps": 150, "steps_doubled": 300, "continued": True}
    assert res["reference"]["uniform"]["spread"] == pytest.approx(ac.uniform_spread(4))
    by = res["by_method"]
    for key in ("step", "half_step"):
        assert max(by["align"]["spread_share_per_seed"][key]) < 0.05
        assert max(by["align"]["uniformity_per_seed"][key]) > -0.01  # near the collapsed 0
        for m in ("align_uniform", "infonce"):
            assert min(by[m]["spread_share_per_seed"][key]) > 0.5
            assert max(by[m]["uniformity_per_seed"][key]) < -1.0
        est = by["align"]["estimates"]["spread_share"][key]
        assert est["n"] == 2 and est["low"] <= est["value"] <= est["high"]
    # twice the steps: alignment alone keeps contracting
    assert max(by["align"]["spread_per_seed"]["half_step"]) < \
        max(by["align"]["spread_per_seed"]["step"])


def test_bad_step_counts_and_optimizers_are_refused():
    kw = {k: v for k, v in TOY.items() if k != "steps"}
    with pytest.raises(ValueError, match="positive"):
        ac.train(**kw, steps=(0, 2))
    with pytest.raises(ValueError, match="optimizer"):
        ac.train(**{**kw, "optimizer": "lbfgs"}, steps=(1,))
    with pytest.raises(ValueError, match="optimizer"):
        AuCollapseConfig(optimizer="lbfgs")
