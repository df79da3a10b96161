from __future__ import annotations

import math

import pytest

from infonce_lab.params import (
    BetaGrowthSchedule,
    CosineSchedule,
    FixedSchedule,
    LogAnnealSchedule,
    NoSchedule,
    StepSchedule,
)
from infonce_lab.pipeline.registry import build_schedule


def test_fixed():
    s = build_schedule(FixedSchedule(tau=0.3))
    assert {s.tau(k) for k in (0, 5, 99)} == {0.3}


def test_log_anneal_closed_form_and_bound():
    s = build_schedule(LogAnnealSchedule(c=0.5, K=2.0, time_per_step=0.1, tau_max=1.5))
    for k in (0, 10, 500, 999):
        beta = 0.5 * math.log(k * 0.1 + 2.0)
        assert s.tau(k) == pytest.approx(min(1.5, 1 / beta))
    assert s.tau(0) == 1.5  # β(0) = 0.35 < 1/τ_max: bounded
    assert all(math.isfinite(s.tau(k)) for k in range(5))
    low_k = build_schedule(LogAnnealSchedule(c=1.0, K=0.5, tau_max=2.0))
    assert low_k.tau(0) == 2.0  # ln(0.5) < 0: τ stays finite and bounded
    tt = [s.tau(k) for k in range(1000)]
    assert all(tt[i] >= tt[i + 1] for i in range(999))  # annealing: τ never increases


def test_cosine_kukleva():
    s = build_schedule(CosineSchedule(tau_min=0.1, tau_max=0.5, period_epochs=4), steps_per_epoch=10)
    assert s.tau(0) == pytest.approx(0.5)
    assert s.tau(20) == pytest.approx(0.1)   # half a period = 2 epochs = 20 steps
    assert s.tau(40) == pytest.approx(0.5)
    assert s.tau(10) == pytest.approx(0.3)
    assert s.tau(7) == pytest.approx(0.1 + 0.2 * (1 + math.cos(2 * math.pi * 7 / 40)))


@pytest.mark.parametrize("kind,ref", [
    ("linear_beta", lambda t: 2.0 + 1.5 * t),
    ("sqrt_beta", lambda t: 2.0 + 1.5 * math.sqrt(t)),
    ("geometric_beta", lambda t: 2.0 * 1.5 ** t),
])
def test_beta_growth(kind, ref):
    s = build_schedule(BetaGrowthSchedule(kind=kind, beta0=2.0, rate=1.5, time_per_step=0.5, beta_max=50.0))
    for k in range(0, 40, 3):
        assert s.tau(k) == pytest.approx(1.0 / min(ref(0.5 * k), 50.0))
    huge = build_schedule(BetaGrowthSchedule(kind=kind, beta0=2.0, rate=1.5, beta_max=50.0))
    assert huge.tau(10**9) == pytest.approx(1 / 50.0)


def test_step():
    s = build_schedule(StepSchedule(taus=[0.5, 0.3, 0.1], milestones_epochs=[2, 5]), steps_per_epoch=10)
    assert [s.tau(k) for k in (0, 19, 20, 49, 50, 99)] == [0.5, 0.5, 0.3, 0.3, 0.1, 0.1]


def test_none_gives_no_temperature():
    assert math.isnan(build_schedule(NoSchedule()).tau(3))


def test_first_step_outside_known_answers():
    """β = 1 + k (linear, rate 1): τ = 1/(1 + k) leaves [1e-4, 1e4] when 1 + k > 1e4, first at
    k = 10,000; a piecewise τ of 1e-6 from step 30 leaves at 30; a fixed τ never does."""
    from infonce_lab.schedules import BetaGrowth, Fixed, Piecewise, first_step_outside

    grow = BetaGrowth("linear", 1.0, 1.0, 1.0, 1e6)
    assert first_step_outside(grow, 10_000, 1e-4, 1e4) is None
    step, tau = first_step_outside(grow, 20_000, 1e-4, 1e4)
    assert step == 10_000 and tau == pytest.approx(1 / 10_001)
    assert first_step_outside(Piecewise((0.5, 1e-6), (30,)), 100, 1e-4, 1e4)[0] == 30
    assert first_step_outside(Fixed(0.2), 100, 1e-4, 1e4) is None
    assert first_step_outside(Fixed(float("nan")), 3, 1e-4, 1e4)[0] == 0


def test_schedule_range_problem_matches_brute_force_over_the_run():
    """The schema's check says a schedule leaves the range exactly when some step of the run,
    evaluated one by one, does."""
    from infonce_lab.params import TAU_MAX, TAU_MIN, schedule_range_problem

    cases = [LogAnnealSchedule(c=c, K=2.0, tau_max=1.0) for c in (0.5, 2000.0, 1e308)]
    cases += [BetaGrowthSchedule(kind=k, beta0=b0, rate=r, beta_max=1e6)
              for k in ("linear_beta", "sqrt_beta") for b0 in (1e-5, 1.0) for r in (0.1, 1e4)]
    for cfg in cases:
        taus = [build_schedule(cfg, 5).tau(k) for k in range(400)]
        outside = any(not TAU_MIN <= t <= TAU_MAX for t in taus)
        assert (schedule_range_problem(cfg, 5, 400) is not None) == outside, cfg


def test_a_text_run_is_checked_once_its_corpus_gives_its_length(raw):
    """Without max_steps a text run's length is known only from its corpus: the text stage then
    refuses a run longer than MAX_RUN_STEPS at text.training.epochs, and a schedule whose τ leaves
    the range on it at its own key, before any tokens are read."""
    from infonce_lab.params import MAX_RUN_STEPS, parse_params
    from infonce_lab.pipeline.text_pretrain import check_text_steps

    name = raw["text"]["study"]["schedules"][0]
    raw["schedules"][name] = {"kind": "linear_beta", "beta0": 1.0, "rate": 1.0,
                              "beta_max": 1e6}
    raw["text"]["training"].pop("max_steps", None)
    p = parse_params(raw)                          # no length yet: the validator cannot tell
    runs = p.text_runs()
    check_text_steps(p, runs, 100, 10_000, 6_400, "lee")       # τ = 1/10,000 at the last step
    with pytest.raises(ValueError, match=rf"schedules.{name}: .* at step 10000 \(a run of 10001"):
        check_text_steps(p, runs, 100, 10_001, 6_400, "lee")
    with pytest.raises(ValueError, match=r"text.training.epochs = \d+: at most 100,000 at the "
                                         r"100 steps per epoch of text.datasets.lee"):
        check_text_steps(p, runs, 100, MAX_RUN_STEPS + 1, 6_400, "lee")
