"""The loss-stage cost measurement (WEINCE §3): known-answer timings from losses that sleep a set
time, the interleaving, the ranges' arithmetic against hand-computed values, and the stage's
params cross-checked by key."""

from __future__ import annotations

import time

import pytest
import torch

from infonce_lab.losses.infonce import info_nce
from infonce_lab.losses.objects import StatelessLoss
from infonce_lab.models import build_encoder
from infonce_lab.params import ResNetConfig
from infonce_lab.train.step_cost import _rounds, loss_overhead, loss_share, ratio, step_cost
from loss_knobs import info_nce_knobs


class Sleepy(StatelessLoss):
    """InfoNCE that also sleeps ``seconds`` in its forward: a loss stage of known least cost."""

    def __init__(self, seconds: float, log: list[str], name: str) -> None:
        self.seconds, self.log, self.name = seconds, log, name

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        self.log.append(self.name)
        time.sleep(self.seconds)
        return info_nce(z1, z2, tau, **info_nce_knobs())


def test_a_loss_that_sleeps_longer_costs_at_least_its_sleep_in_both_timings():
    torch.manual_seed(0)
    enc = build_encoder(ResNetConfig(widths=[4, 8], blocks=[1, 1], head_hidden=8, head_dim=8), 1)
    log: list[str] = []
    # 0.1 s: far above what the tiny net's step costs even on a loaded host (with 0.03 s the
    # share fell to 0.22 once, the other test worker busy)
    losses = {"fast": Sleepy(0.0, log, "fast"), "slow": Sleepy(0.1, log, "slow")}
    r = step_cost(enc, losses, torch.rand(16, 1, 8, 8), tau=0.5, steps=3, loss_repeats=5)
    assert r["views"] == 16 and r["dim"] == 8
    assert [len(r["step_ms"][n]) for n in losses] == [3, 3]
    assert [len(r["loss_ms"][n]) for n in losses] == [5, 5]
    # the sleep is a lower bound whatever else the host runs (a difference of medians is not:
    # the fast loss took 16–48 ms once with the host loaded)
    assert min(r["loss_ms"]["slow"]) >= 100.0 and min(r["step_ms"]["slow"]) >= 100.0
    share = loss_share(r["step_ms"]["slow"], r["loss_ms"]["slow"])
    assert share["low"] <= share["value"] <= share["high"]
    # the sleep is most of both: the share cannot be small
    assert share["value"] > 0.3
    # one untimed step and stage of each, then the timed steps alternate order round by round
    assert log[:4] == ["fast", "fast", "slow", "slow"]
    assert log[4:10] == ["fast", "slow", "slow", "fast", "fast", "slow"]


def test_rounds_reverse_every_other_round():
    assert _rounds(["a", "b", "c"], 3) == [["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"]]


def test_the_ranges_match_hand_computed_quantiles():
    step = [100.0, 110.0, 90.0]
    loss = [float(x) for x in range(1, 11)]  # quantiles 10%: 1.9, 90%: 9.1; median 5.5
    s = loss_share(step, loss)
    assert s["value"] == pytest.approx(5.5 / 100.0)
    assert s["low"] == pytest.approx(1.9 / 110.0) and s["high"] == pytest.approx(9.1 / 90.0)
    r = ratio([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert r["value"] == pytest.approx(2.0)
    assert r["low"] == pytest.approx(2.4 / 2.8) and r["high"] == pytest.approx(5.6 / 1.2)
    o = loss_overhead(step, [x + 10.0 for x in loss], loss)
    assert o["value"] == pytest.approx(10.0 / 100.0)
    # the treatment's 10% quantile less the reference's 90%, over the slowest step; and back
    assert o["low"] == pytest.approx((11.9 - 9.1) / 110.0)
    assert o["high"] == pytest.approx((19.1 - 1.9) / 90.0)
    # a difference that may be negative is divided so that the range only widens
    o = loss_overhead(step, loss, loss)
    assert o["low"] == pytest.approx((1.9 - 9.1) / 90.0) and o["high"] == pytest.approx(7.2 / 90.0)


@pytest.mark.parametrize(("key", "value", "where"), [
    ("backbone", "no_such", "step_cost.backbone = 'no_such'"),
    ("reference", "no_such", "step_cost.reference = 'no_such'"),
    ("treatment", "infonce", "step_cost.treatment = 'infonce'"),
    ("treatment", "infonce_oracle", "step_cost.treatment = 'infonce_oracle'"),
])
def test_a_name_the_sections_lack_is_refused_by_its_key(raw, config_error, key, value, where):
    raw["step_cost"][key] = value
    assert where in config_error(raw)
