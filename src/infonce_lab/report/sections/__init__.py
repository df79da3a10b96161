"""The report's sections, each declared once. A section module ends with

    SECTION = Section(id=..., paper=..., title=..., evidence=..., reads=..., rules=RULES,
                      rows=..., context=..., figures=..., sim_figures=...)

— the results it reads (:class:`Inputs` fields), the rules it decides with (each stated before the
data and printed on the page), its claim rows, the numbers its template prints (``context[id]``)
and its figures. The page (:mod:`infonce_lab.pipeline.report_page`) is a loop over :func:`declared`; its
papers, contents and anchors come from :data:`PAPERS`. A new section is one module here, its
template partial and its test file.

``tests/report/test_report_<module>.py`` holds ``FIXTURES: dict[str, tuple[input, input]]``: for
every rule id, an input that must pass the rule and one that must fail it. ``tests/test_rules.py``
checks that every module's every rule has both, and that they decide as they must.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from infonce_lab.report.verdicts import Check, ClaimRow, Evidence, Rule

Drawer = Callable[[dict[str, Any]], bytes | None]


@dataclass(frozen=True)
class Paper:
    """One part of the page: a paper whose claims it sets beside our measurements."""

    id: str
    title: str  # the heading
    name: str  # how the summary names it
    short: str  # the first screen's line
    source: str
    link: str
    lead: str  # what the paper claims, in two or three sentences

    @property
    def anchor(self) -> str:
        return markdown_anchor(self.title)


def markdown_anchor(title: str) -> str:
    """GitHub's anchor of the Markdown heading ``## {title}``."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


PAPERS: tuple[Paper, ...] = (
    Paper("weince", "WEINCE: Weibull-corrected InfoNCE", "WEINCE (Weibull-corrected InfoNCE)", "WEINCE",
          "arXiv 2606.00262", "https://arxiv.org/abs/2606.00262",
          "WEINCE blends the softmax logit s/τ with the Weibull shortfall logit −log(1 − s) per "
          "anchor and beats InfoNCE downstream (Tables 2–3, STS-B); the reason is the tail of the "
          "negative similarities, Weibull-like (finite endpoint) rather than Gumbel-like "
          "(Figs 3, 5–8)."),
    Paper("annealing", "Langevin temperature annealing", "Langevin temperature annealing",
          "Temperature annealing",
          "arXiv 2603.12552", "https://arxiv.org/abs/2603.12552",
          "A theory-only paper: under logarithmic schedules β(t) = c·ln(t + K), Langevin dynamics "
          "on InfoNCE escapes every trap when c ≤ c* = 1/ΔE and stays trapped with positive "
          "probability when c > c*; faster schedules trap; the Hessian sharpens with β. Tested "
          "on simulations whose barriers are known in closed form or computed on a grid."),
    Paper("geometry", "Geometric mechanics of contrastive learning",
          "Geometric mechanics of contrastive learning", "Geometric mechanics", "arXiv 2601.19597",
          "https://arxiv.org/abs/2601.19597",
          "As the batch grows, InfoNCE and its gradient converge to a deterministic free-energy "
          "functional (Thm 3.1) whose minimisers are Gibbs laws ρ* ∝ exp(−U/τ) on the sphere; "
          "two modalities that disagree keep a gap that grows with their mismatch."),
    Paper("au", "Alignment and uniformity", "Alignment and uniformity (Wang & Isola 2020)",
          "Alignment & uniformity",
          "Wang & Isola 2020", "https://arxiv.org/abs/2005.10242",
          "As the number of negatives M grows, InfoNCE − log M tends to an alignment term plus a "
          "uniformity term (Theorem 1), deviations O(M^(−1/2)); encoders with lower alignment "
          "and uniformity losses do better downstream, so optimising them directly (DirectAU) "
          "is competitive."),
    Paper("pipeline", "The pipeline", "The pipeline's own check", "Pipeline check",
          "the default study", "",
          "What every number above rests on: trained encoders beat their own random "
          "initialisation."),
)


@dataclass(frozen=True)
class Inputs:
    """Everything the sections read, read once by the report stage (a section never opens a
    file). ``summary``: reports/summary.json; ``sims``: the listed experiments' files present;
    ``tails``/``text``: the summary's blocks (None when absent); ``design``: params.yaml's
    primary block; ``settings``: the few params values the rules and the narrative print."""

    summary: Mapping[str, Any]
    encoders: pd.DataFrame
    curves: Mapping[str, Mapping[str, pd.DataFrame]]
    text_curves: Mapping[str, Mapping[str, pd.DataFrame]]
    sims: Mapping[str, dict[str, Any]]
    noise: dict[str, Any] | None
    representative: dict[str, Any] | None
    loss_kinds: Mapping[str, str]
    placements: tuple[str, ...]
    design: Mapping[str, Any]
    settings: Mapping[str, Any] = field(default_factory=dict)
    step_cost: dict[str, Any] | None = None  # reports/step_cost.json

    @property
    def groups(self) -> Mapping[str, Any]:
        return self.summary["groups"]

    @property
    def paired(self) -> Mapping[str, Any]:
        return self.summary.get("paired", {})

    @property
    def pooled(self) -> Mapping[str, Any]:
        return self.summary.get("pooled", {})

    @property
    def tails(self) -> Mapping[str, Any] | None:
        return self.summary.get("tails")

    @property
    def text(self) -> Mapping[str, Any] | None:
        return self.summary.get("text")


@dataclass(frozen=True)
class Section:
    """One declared section (see the module's docstring). ``evidence``: what its rows rest on,
    unless a row says otherwise or its topic is in ``by_topic``."""

    id: str
    paper: str
    title: str
    evidence: Evidence
    reads: tuple[str, ...]
    rules: Mapping[str, Rule | Check]
    rows: Callable[[Inputs], list[ClaimRow]]
    context: Callable[[Inputs], Any] | None = None
    figures: Callable[[Inputs], Mapping[str, bytes | None]] | None = None
    sim_figures: Mapping[str, Mapping[str, Drawer]] = field(default_factory=dict)
    by_topic: Mapping[str, Evidence] = field(default_factory=dict)
    introduces: Paper | None = None  # a paper not in PAPERS: the page gets its part after them
    templates: Path | None = None  # the folder with its sections/<id>.j2, if not the package's

    def claim_rows(self, inputs: Inputs) -> list[ClaimRow]:
        """Its rows, each with its evidence settled."""
        return [r if r.evidence is not None
                else replace(r, evidence=self.by_topic.get(r.topic, self.evidence))
                for r in self.rows(inputs)]


def modules() -> list[ModuleType]:
    """Every section module of this package (derived from the files, never listed by hand)."""
    return [importlib.import_module(f"{__name__}.{m.name}")
            for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]


def papers(sections: list[Section]) -> tuple[Paper, ...]:
    """The page's papers: :data:`PAPERS`, then those the sections introduce."""
    introduced = tuple(s.introduces for s in sections if s.introduces is not None)
    ids = [p.id for p in (*PAPERS, *introduced)]
    if len(set(ids)) != len(ids):
        raise ValueError(f"two papers share an id: {ids}")
    return (*PAPERS, *introduced)


def ordered(sections: list[Section]) -> list[Section]:
    """Sections checked and in page order (their paper's place, then as given)."""
    order = [p.id for p in papers(sections)]
    unknown = [s.id for s in sections if s.paper not in order]
    if unknown:
        raise ValueError(f"sections {unknown} name a paper that is neither in PAPERS nor "
                         "introduced by a section")
    ids = [s.id for s in sections]
    if len(set(ids)) != len(ids):
        raise ValueError(f"two sections share an id: {ids}")
    return sorted(sections, key=lambda s: order.index(s.paper))


def declared() -> list[Section]:
    """Every module's SECTION, in page order."""
    return ordered([m.SECTION for m in modules()])


def sim_drawers(sections: list[Section] | None = None) -> dict[str, dict[str, Drawer]]:
    """Every section's simulation figures in one table: experiment → {figure name: drawer}."""
    table: dict[str, dict[str, Drawer]] = {}
    for section in sections if sections is not None else declared():
        for experiment, drawers in section.sim_figures.items():
            if experiment in table:
                raise ValueError(f"{section.id}: experiment {experiment!r} already has figures")
            table[experiment] = dict(drawers)
    return table
