"""The loss functions' knobs at the schema's defaults: the math takes every knob by keyword with
no default of its own (the schema is where defaults live), so a test that means "the default
WEINCE" asks the schema for it. ``weince_knobs(q=0.5)`` overrides one."""

from __future__ import annotations

from typing import Any

from infonce_lab.params import DirectAUConfig, InfoNCEConfig, WeinceConfig


def _fields(cfg: Any, *drop: str) -> dict[str, Any]:
    return {k: getattr(cfg, k) for k in type(cfg).model_fields if k not in ("kind", *drop)}


def weince_knobs(**overrides: Any) -> dict[str, Any]:
    knobs = _fields(WeinceConfig(), "auto_beta")
    knobs["beta_clip"] = tuple(knobs["beta_clip"])
    knobs["beta_t"] = WeinceConfig().auto_beta.init   # the EMA's starting value
    return {**knobs, **overrides}


def info_nce_knobs(**overrides: Any) -> dict[str, Any]:
    return {**_fields(InfoNCEConfig(), "tau_scale", "mask_same_class"), **overrides}


def direct_au_knobs(**overrides: Any) -> dict[str, Any]:
    return {**_fields(DirectAUConfig(), "schedule_drives"), **overrides}


def tail_fit_knobs(**overrides: Any) -> dict[str, Any]:
    w = WeinceConfig()
    return {"tail_frac": w.tail_frac, "min_tail_points": w.min_tail_points, "eps": w.eps,
            **overrides}
