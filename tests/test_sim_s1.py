"""S1 end to end at a small size, and the experiment registry behind the simulate stage."""

from __future__ import annotations

import pytest

from infonce_lab.config import SimulationConfig
from infonce_lab.simulation.experiments import EXPERIMENTS, run_experiment
from infonce_lab.simulation.s1 import run_s1


def test_s1_barrier_and_trap_curves():
    res = run_s1(grid=64, chains=40, horizon=2.0, check_every=50, c_ratios=(0.5, 2.0))
    # ΔE_max(U_0) = κ_s/16 exactly (the escape path's maximum); the 64³ grid resolves it to ~3%
    assert res["barrier"]["c_star"] == pytest.approx(16.0, rel=0.05)
    assert res["barrier"]["trap_u0"] == pytest.approx(1.0)
    for dyn in ("P2", "P1"):
        names = [c["name"] for c in res["dynamics"][dyn]]
        assert names == ["log c/c*=0.5", "log c/c*=2", "sqrt"]
        for c in res["dynamics"][dyn]:
            assert c["p_trap"][0] == 1.0  # every chain starts in the trap basin
            assert all(0.0 <= p <= 1.0 for p in c["p_trap"])
            lo, hi = c["p_trap_end_ci"]
            assert lo <= c["p_trap_end"] <= hi


def test_registry_covers_every_configurable_experiment():
    assert set(EXPERIMENTS) == set(SimulationConfig.model_fields["experiments"].default)
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        run_experiment("nope", SimulationConfig())
