"""The progress line: what it says, how often (a log gets one line per interval, a terminal a
redrawn line), its ETA from the rate since the first update (a resumed run included)."""

from __future__ import annotations

import io

import pytest

from infonce_lab.train.progress import Progress, duration, interval


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


RECORD = {"loss": 5.12341, "tau": 0.2, "samples_per_s": 1234.5}


def test_log_lines_are_rate_limited_and_the_last_is_always_shown():
    out, clock = io.StringIO(), Clock()
    p = Progress("run-1", out, every_s=30, clock=clock)
    for step in range(1, 101):  # 1 s per step
        clock.t = float(step)
        p.update(step, 100, 10, RECORD)
    lines = out.getvalue().splitlines()
    assert len(lines) == 5  # steps 1, 31, 61, 91 and the last
    assert lines[-1] == ("run-1: step 100/100 · epoch 10/10 · loss 5.1234 · τ 0.2 · "
                         "1,234 views/s · ETA 0:00")
    assert "ETA 0:39" in lines[2] and "step 61/100 · epoch 7/10" in lines[2]  # 39 steps left


def test_a_resumed_run_estimates_from_its_own_rate():
    out, clock = io.StringIO(), Clock()
    p = Progress("r", out, every_s=0.5, clock=clock)
    clock.t = 100.0
    p.update(400, 1000, 100, RECORD)  # resumed at step 400: no rate yet
    clock.t = 110.0
    p.update(500, 1000, 100, RECORD)  # 10 steps/s → 50 s left
    first, second = out.getvalue().splitlines()
    assert first.endswith("ETA ?") and second.endswith("ETA 0:50")


def test_a_terminal_redraws_one_line_and_zero_is_silent(monkeypatch):
    tty, clock = Tty(), Clock()
    p = Progress("r", tty, clock=clock)
    assert p.every_s == 1.0
    for step in (1, 2, 3):
        clock.t = step * 2.0
        p.update(step, 3, 3, RECORD)
    text = tty.getvalue()
    assert text.count("\r\033[K") == 3 and text.count("\n") == 1 and text.endswith("\n")
    silent = io.StringIO()
    Progress("r", silent, every_s=0).update(1, 1, 1, RECORD)
    assert silent.getvalue() == ""
    assert interval(io.StringIO(), {}) == 30.0
    assert interval(io.StringIO(), {"INFONCE_LAB_PROGRESS_S": "5"}) == 5.0
    with pytest.raises(ValueError, match="INFONCE_LAB_PROGRESS_S"):
        interval(io.StringIO(), {"INFONCE_LAB_PROGRESS_S": "often"})


def test_duration():
    assert duration(59.4) == "0:59" and duration(3725) == "1:02:05" and duration(float("nan")) == "?"
