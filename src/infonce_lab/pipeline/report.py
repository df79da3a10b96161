"""The report stage: reports/index.html (self-contained), reports/REPORT.md and one Markdown page
per paper, from the aggregate stage's summary, the diagnose stage's reports/tails/ and the
simulate stage's reports/sims/; it computes nothing new. This module reads the files once into
:class:`~infonce_lab.report.sections.Inputs`; :mod:`infonce_lab.pipeline.report_page` builds the page."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from infonce_lab.io import read_json, replaced_together, write_bytes_atomic
from infonce_lab.params import BackboneConfig, Params, Run, TorchvisionResNetConfig
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.report_page import build_page
from infonce_lab.report.loaders import load_sims, representative_plots
from infonce_lab.report.render import load_curves
from infonce_lab.report.sections import Inputs


def trained_on(out: Path, runs: list[Run]) -> dict[str, int]:
    """How many of ``runs`` each CPU model trained (their run.json; "unrecorded" for results
    written before the machine was)."""
    machines: Counter[str] = Counter()
    for run in runs:
        f = out / "train" / paths.in_configuration(run.id) / "run.json"
        if f.is_file():
            machines[read_json(f).get("machine", "unrecorded")] += 1
    return dict(machines)


def backbone_arch(cfg: BackboneConfig) -> str:
    """A backbone's architecture as the papers name it: resnet18, resnet50, vit_small, or its
    kind (our own CIFAR-style ResNets)."""
    return f"resnet{cfg.depth}" if isinstance(cfg, TorchvisionResNetConfig) else cfg.kind


def read_inputs(params: Params, out: Path) -> Inputs:
    """Every file the sections read; a missing optional one is noted and its claims read 'not
    run' (summary.json alone is required)."""
    summary_path = out / "summary.json"
    if not summary_path.is_file():
        raise FileNotFoundError(f"{summary_path}: missing; run the aggregate stage")
    summary = read_json(summary_path)
    noise_path = out / "tails" / "noise_floor.json"
    noise = read_json(noise_path) if noise_path.is_file() else None
    if noise is None:
        print(f"note: {noise_path} missing; noise-floor figure and verdict omitted")
    cost_path = out / "step_cost.json"
    step_cost = read_json(cost_path) if cost_path.is_file() else None
    if step_cost is None:
        print(f"note: {cost_path} missing; the overhead claims read 'not run'")
    representative = None
    if summary.get("tails"):  # the figures show the first dataset of the study
        plots_dir = out / "tails" / "plots" / params.study.datasets[0]
        representative = representative_plots(plots_dir, [r.id for r in params.runs()])
        if representative is None:
            print(f"note: no plots file in {plots_dir}; per-run tail figures omitted")
    listed = list(params.simulation.experiments)
    sims = load_sims(out / "sims", listed)
    if missing := [e for e in listed if e not in sims]:
        print(f"note: no {out / 'sims'} file for {', '.join(missing)}; their claims read 'not run'")
    if not (summary.get("text") or {}).get("groups"):
        print("note: no text results in the summary; their claims read 'not run'")
    text = params.text
    return Inputs(
        summary=summary, encoders=pd.read_csv(out / "tables" / "encoders.csv"),
        curves=load_curves({r.id: out / "train" / paths.in_configuration(r.id)
                            for r in params.runs()}),
        text_curves=load_curves({r.id: out / "text" / "train" / paths.in_configuration(r.id)
                                 for r in params.text_runs()}),
        sims=sims, noise=noise, representative=representative, step_cost=step_cost,
        loss_kinds={n: c.kind for n, c in params.losses.items()},
        placements=tuple(params.tails.link.placements), design=params.primary.model_dump(),
        settings={
            "losses": {n: c.model_dump() for n, c in params.losses.items()},
            "primary_machines": trained_on(out, params.primary_runs()),
            "fixed_taus": {n: float(c.tau) for n, c in params.schedules.items()
                           if c.kind == "fixed"},
            "text_dataset_kinds": {n: c.kind for n, c in text.datasets.items()},
            "text_datasets": {n: text.datasets[n].kind for n in text.study.datasets},
            "text_encoders": {n: text.encoders[n].source for n in text.study.encoders},
            "min_gain_over_random": params.report.min_gain_over_random,
            "synthetic_data": params.report.synthetic_data,
            # what tells the paper's settings (report/sections/weince_accuracy.py)
            "dataset_kinds": {n: c.kind for n, c in params.datasets.items()},
            "backbone_archs": {n: backbone_arch(c) for n, c in params.backbones.items()},
            "schedules": sorted(params.schedules)})


def write_report(params: Params, out: Path = Path("reports")) -> None:
    """The page, its figures, the per-paper pages and the headline metrics, replaced together
    (io.replaced_together): a failure leaves the previous report whole."""
    page = build_page(params, read_inputs(params, out), out)
    with replaced_together() as outputs:
        fig_dir = outputs.dir(out / "figures")
        for name, png in page.figures.items():
            write_bytes_atomic(fig_dir / f"{name}.png", png)
        papers_dir = outputs.dir(out / "details")
        for name, text in page.papers.items():
            write_bytes_atomic(papers_dir / f"{name}.md", text.encode("utf-8"))
        outputs.json(out / "headline.json", page.headline)
        outputs.text(out / "index.html", page.html)
        outputs.text(out / "REPORT.md", page.markdown)
    print(f"wrote {out / 'index.html'}, {out / 'REPORT.md'} and {out / 'details'}/")
