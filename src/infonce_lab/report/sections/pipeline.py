"""What every other number rests on: a trained encoder's frozen features beat those of the same
network at its random initialisation (the run's own starting point, same seed) by more than the
study's stated margin (``report.min_gain_over_random``), paired over seeds, Holm within the
claim."""

from __future__ import annotations

from typing import Any

import pandas as pd

from infonce_lab.evaluation import metrics
from infonce_lab.evaluation.stats import TInference
from infonce_lab.params import RunId
from infonce_lab.report.plotting import Curves, by_group, panels
from infonce_lab.report.sections import Section
from infonce_lab.report.sections._paired import POINTS
from infonce_lab.report.verdicts import (
    Above,
    ClaimRow,
    Estimate,
    Evidence,
    claim,
    decide_family,
    not_run_row,
)

PAPER, TOPIC = "pipeline", "Does contrastive pretraining learn anything?"
METRICS = metrics.labels(headline=True)
DEFAULT_MARGIN = 0.10  # params.yaml report.min_gain_over_random


def gain_rule(margin: float) -> Above:
    return Above(POINTS * margin, unit="points", what="trained − its random init")


RULES = {"gain_over_random": gain_rule(DEFAULT_MARGIN)}


def claim_rows(summary: dict[str, dict[str, Any]], margin: float = DEFAULT_MARGIN
               ) -> list[ClaimRow]:
    rule = gain_rule(margin)
    text = (f"Pretraining learns: frozen features of every trained configuration beat its own "
            f"random initialisation by more than {POINTS * margin:g} points")
    quantity = "trained − random init (same backbone and seed), test split, paired over seeds"
    estimates, names = [], []
    for group, s in summary.items():
        for metric, gain in s.get("gain_over_random_init", {}).items():
            t = TInference.from_json(gain["t"]) if gain.get("t") else None
            estimates.append(Estimate.from_t(t, scale=POINTS, unit="points", digits=1,
                                             signed=True))
            names.append(f"{group}, {METRICS.get(metric, metric)}")
    if not estimates:
        return [not_run_row(PAPER, TOPIC, text, quantity, rule,
                            "list random_init in study.baselines")]
    return [claim(PAPER, TOPIC, text, quantity, rule, decide_family(rule, estimates, names))]


# ---------------------------------------------------------------------------- figures
def training_curves(curves: dict[str, dict[str, pd.DataFrame]]) -> bytes:
    """Per configuration (mean over seeds): loss, alignment, uniformity, top-1 of the positive."""
    names = [("loss", "training loss"), ("alignment", "alignment (lower = closer positives)"),
             ("uniformity", "uniformity (lower = more uniform)"),
             ("top1_acc", "positive ranked first among candidates")]
    return panels([(title, by_group(curves, name)) for name, title in names])


def temperature_curves(curves: dict[str, dict[str, pd.DataFrame]]) -> bytes:
    """τ(step) of each schedule as training used it (one line per schedule)."""
    per_schedule: Curves = {}
    for run, frames in curves.items():
        schedule = RunId.parse(run).config.schedule
        if "tau" in frames and schedule not in per_schedule:
            df = frames["tau"]
            per_schedule[schedule] = pd.DataFrame({"step": df["step"], "value": df[df.columns[-1]]})
    return panels([("temperature τ(step)", per_schedule)])


SECTION = Section(
    id="pipeline", paper="pipeline", title="The pipeline", evidence=Evidence.SETTING,
    reads=("summary.groups", "curves"), rules=RULES,
    rows=lambda i: claim_rows(dict(i.groups), i.settings["min_gain_over_random"]),
    figures=lambda i: {"training": training_curves({k: dict(v) for k, v in i.curves.items()})})
