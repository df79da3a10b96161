"""A measured quantity with its interval: what a rule decides on, and what the aggregate stage
writes for every seed-level combination (``to_json``/``from_dict`` round-trip it through
summary.json)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from infonce_lab.evaluation.stats import TInference


@dataclass(frozen=True)
class Estimate:
    """A measured quantity: ``value`` with its (two-sided, ``level``) interval [low, high].

    ``t`` (optional) is the t-inference behind it, which gives p-values at any null value (and
    so Holm within a family); without it a rule decides on the interval alone. ``undefined``
    says why there is no value (a degenerate or boundary fit); ``unit``/``digits`` format it.
    """

    value: float | None
    low: float | None = None
    high: float | None = None
    level: float = 0.95
    t: TInference | None = None
    n: int | None = None
    undefined: str | None = None
    unit: str = ""
    digits: int = 3
    signed: bool = False
    note: str = ""

    @classmethod
    def from_t(cls, t: TInference | None, *, scale: float = 1.0, **kw: Any) -> Estimate:
        """From a t-inference (None: one seed, no interval); ``scale`` converts units (e.g. 100
        for accuracy points) of the value, the interval and the null values alike."""
        if t is None:
            return cls(None, undefined="one seed: no interval", **kw)
        if scale != 1.0:
            t = TInference(t.mean * scale, t.se * scale, t.df, t.n)
        lo, hi = t.interval()
        return cls(t.mean, lo, hi, t=t, n=t.n, **kw)

    @classmethod
    def missing(cls, why: str) -> Estimate:
        return cls(None, undefined=why)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None, **kw: Any) -> Estimate:
        """From a results file's estimate: ``{"value", "low", "high"}`` plus any other field
        :meth:`to_json` writes (``t`` as a :meth:`TInference.to_json` dict); ``kw`` overrides."""
        why = kw.pop("why", "not in the results file")
        if d is None:
            return cls.missing(why)
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in d.items() if k in known and v is not None}
        if values.get("t"):
            values["t"] = TInference.from_json(values["t"])
        return cls(**{"value": None, **values, **kw})

    def to_json(self) -> dict[str, Any]:
        """Every field, ``t`` as its :meth:`TInference.to_json` dict; None fields left out."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["t"] = None if self.t is None else self.t.to_json()
        return {k: v for k, v in out.items() if v is not None}

    @property
    def defined(self) -> bool:
        return self.undefined is None and self.value is not None and math.isfinite(self.value)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def p_greater(self, theta: float) -> float | None:
        return None if self.t is None else self.t.p_greater(theta)

    def p_less(self, theta: float) -> float | None:
        return None if self.t is None else self.t.p_less(theta)

    def __str__(self) -> str:
        if not self.defined:
            return f"undefined ({self.undefined})" if self.undefined else "—"
        d = self.digits
        unit = f" {self.unit}" if self.unit else ""
        sign = "+" if self.signed else ""
        text = f"{self.value:{sign}.{d}f}"
        if self.has_interval:
            text += f" [{self.low:{sign}.{d}f}, {self.high:{sign}.{d}f}]"
        text += unit
        if self.n is not None:
            text += f" (n = {self.n})"
        return text + (f"; {self.note}" if self.note else "")


