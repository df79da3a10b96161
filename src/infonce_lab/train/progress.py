"""A training run's progress on the terminal: step, epoch, loss, τ, views/s and the time left.

On a terminal the line is redrawn in place about once a second; elsewhere (CI logs, ``dvc
repro`` under nohup) one line every ``every_s`` seconds, so a long stage stays audible without
flooding a log. ``INFONCE_LAB_PROGRESS_S`` sets the interval (0: silent). The display reads only
what the loop already computed for its telemetry record: it costs no extra synchronisation.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

ENV = "INFONCE_LAB_PROGRESS_S"
TTY_EVERY_S, LOG_EVERY_S = 1.0, 30.0


def interval(stream: TextIO, env: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """Seconds between lines: the environment's choice, else 1 on a terminal and 30 in a log."""
    if env.get(ENV):
        try:
            return max(0.0, float(env[ENV]))
        except ValueError:
            raise ValueError(f"{ENV}={env[ENV]!r}: expected seconds (0 turns progress off)") from None
    return TTY_EVERY_S if stream.isatty() else LOG_EVERY_S


def duration(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """``update(step, total, steps_per_epoch, record)`` at every telemetry step (rank 0)."""

    def __init__(self, label: str, stream: TextIO | None = None, every_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.stream = label, stream or sys.stderr
        self.every_s = interval(self.stream) if every_s is None else every_s
        self.tty = self.stream.isatty()
        self.clock = clock
        self.start: tuple[float, int] | None = None
        self.last_print = -math.inf

    def line(self, step: int, total: int, spe: int, record: dict[str, Any], now: float) -> str:
        epochs = max(1, math.ceil(total / max(spe, 1)))
        parts = [f"{self.label}: step {step}/{total}", f"epoch {min(1 + (step - 1) // spe, epochs)}/{epochs}"]
        for key, fmt in (("loss", "loss {:.4f}"), ("tau", "τ {:.3g}")):
            if isinstance(record.get(key), (int, float)):
                parts.append(fmt.format(record[key]))
        if isinstance(record.get("samples_per_s"), (int, float)):
            parts.append(f"{record['samples_per_s']:,.0f} views/s")
        t0, s0 = self.start or (now, step)
        rate = (step - s0) / (now - t0) if now > t0 and step > s0 else math.nan
        parts.append(f"ETA {duration((total - step) / rate) if rate > 0 else '?'}")
        return " · ".join(parts)

    def update(self, step: int, total: int, spe: int, record: dict[str, Any]) -> None:
        if self.every_s <= 0:
            return
        now = self.clock()
        if self.start is None:
            self.start = (now, step)  # a resumed run: the rate counts from here, not step 0
        done = step >= total
        if not done and now - self.last_print < self.every_s:
            return
        self.last_print = now
        text = self.line(step, total, spe, record, now)
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if done else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
