"""The report stage: reports/index.html (self-contained) and reports/REPORT.md from the metrics and
plot data (the aggregate stage's summary, the diagnose stage's reports/tails/, the simulate stage's
reports/sims/); it computes nothing new."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from infonce_lab.evaluation import metrics
from infonce_lab.evaluation.stats import TInference
from infonce_lab.io import read_json, replaced_together, write_bytes_atomic
from infonce_lab.params import Configuration, Params
from infonce_lab.pipeline import paths
from infonce_lab.report.headline import LIMIT, headline
from infonce_lab.report.interactive import VENDORED, au_plane_spec, vendored_scripts
from infonce_lab.report.loaders import load_sims, representative_plots
from infonce_lab.report.plotting import sim_figures
from infonce_lab.report.render import (
    build_context,
    load_curves,
    paired_table,
    render,
    schedule_comparisons,
    scoreboard,
    stage_names,
    stage_timings,
)
from infonce_lab.report.sections import (
    annealing_s0,
    annealing_s1,
    au_empirical,
    geometry,
    paper_scale,
    sim_drawers,
    weince_accuracy,
    weince_tails,
    weince_text,
    weince_theory,
)
from infonce_lab.report.sections import (
    pipeline as pipeline_section,
)


def headline_record(path: Path, rows: list[Any], full: dict[str, Any],
                    params: Params) -> dict[str, Any]:
    """``reports/headline.json``: dvc.yaml's one ``metrics:`` file (report.headline)."""
    board = scoreboard(rows)["sections"]
    counts = {k: sum(s[k] for s in board)
              for k in ("reproduced", "not_reproduced", "inconclusive", "not_run")}
    pr = params.primary
    primary_groups = [Configuration(pr.dataset, pr.backbone, loss, pr.schedule).to_str()
                      for loss in pr.losses] if pr.seeds else []
    raw = f"{pr.dataset}-raw_pixels"
    numbers, left_out = headline(
        counts, full.get("primary") or {}, full["groups"], primary_groups,
        raw if raw in full["groups"] else None, list(pr.metrics),
        (full.get("text") or {}).get("groups", {}))
    if left_out:
        print(f"note: {path} keeps {LIMIT} numbers; left out: {', '.join(left_out)} "
              "(all in summary.json)")
    return {**numbers, "left_out": len(left_out)}


def write_report(params: Params, out: Path = Path("reports")) -> None:
    """The page from the aggregate stage's summary, the diagnostics' and the simulations' files."""
    summary_path = out / "summary.json"
    if not summary_path.is_file():
        raise FileNotFoundError(f"{summary_path}: missing; run the aggregate stage")
    full = read_json(summary_path)
    summary = full["groups"]
    encoders = pd.read_csv(out / "tables" / "encoders.csv")
    folders = {r.id: out / "train" / paths.in_configuration(r.id) for r in params.runs()}
    curves = load_curves(folders)
    figures = {
        "accuracy": pipeline_section.accuracy_bars(summary),
        "training": pipeline_section.training_curves(curves),
        "temperature": pipeline_section.temperature_curves(curves),
        "au_plane": au_empirical.alignment_uniformity_plane(encoders),
    }
    lam = weince_tails.lambda_curves(curves)
    if lam is not None:
        figures["lambda"] = lam
    kinds = {n: c.kind for n, c in params.losses.items()}
    placements = list(params.tails.link.placements)
    # Summaries written before the diagnose stage existed have no "tails": the rows read 'not run'.
    tails = full.get("tails")
    noise_path = out / "tails" / "noise_floor.json"
    noise = read_json(noise_path) if noise_path.is_file() else None
    if noise is None:
        print(f"note: {noise_path} missing; noise-floor figure and verdict omitted")
    representative = None
    if tails:
        # the figures show the first dataset of the study
        plots_dir = out / "tails" / "plots" / params.study.datasets[0]
        representative = representative_plots(plots_dir, list(folders))
        if representative is None:
            print(f"note: no plots file in {plots_dir}; per-run tail figures omitted")
        figures.update(weince_tails.tail_figures(tails, placements[0], representative, noise))
    # Simulations: whichever listed experiments have a file; a missing one's claims read 'not run'.
    listed = list(params.simulation.experiments)
    sims = load_sims(out / "sims", listed)
    missing = [e for e in listed if e not in sims]
    if missing:
        print(f"note: no {out / 'sims'} file for {', '.join(missing)}; their claims read 'not run'")
    figures.update(sim_figures(sims, sim_drawers()))
    text = full.get("text")
    text_args = {
        "losses": {n: c.model_dump() for n, c in params.losses.items()},
        "taus": {n: float(c.tau) for n, c in params.schedules.items() if c.kind == "fixed"}}
    if text and text.get("groups"):
        text_curves = load_curves({r.id: out / "text" / "train" / paths.in_configuration(r.id)
                                  for r in params.text_runs()})
        figures["text"] = weince_text.text_figure(text, text_curves)
    else:
        print("note: no text results in the summary; their claims read 'not run'")
    context = build_context(params, summary, figures, folders)
    paired = full.get("paired", {})
    context["paired"] = paired
    pr, few = params.primary, params.evaluation.few_labels
    context["primary"] = {
        **pr.model_dump(), "labels": [metrics.BY_NAME[m].label for m in pr.metrics],
        "plain": (f"dataset {pr.dataset} (kind {params.datasets[pr.dataset].kind}), backbone "
                  f"{pr.backbone} (kind {params.backbones[pr.backbone].kind}), "
                  f"{params.training.epochs} epochs at batch {params.training.batch_size}; the "
                  f"few-label metrics from {few.per_class} labels per class, {few.draws} draws")
        if pr.seeds else ""}
    context["selection"] = full.get("selection", {})
    context["tails"] = weince_tails.context(tails, kinds, placements)
    context["tails_representative"] = representative
    context["text"] = weince_text.context(
        text, kinds, **text_args,
        datasets={n: params.text.datasets[n].kind for n in params.text.study.datasets},
        encoders={n: params.text.encoders[n].source for n in params.text.study.encoders})
    context["s0"] = annealing_s0.context(sims)
    context["s1ctx"] = annealing_s1.context(sims)
    context["geometry"] = geometry.context(sims)
    context["theory"] = weince_theory.context(sims.get("link_theory"), noise)
    context["claim_rows"] = (
        weince_accuracy.claim_rows(paired, kinds, full.get("selection_inflation"),
                                   full.get("primary"), params.primary.model_dump())
        + weince_text.claim_rows(text, kinds, **text_args, dataset_kinds={
            n: c.kind for n, c in params.text.datasets.items()})
        + weince_tails.claim_rows(tails, kinds, placements, full.get("text_tails"))
        + weince_theory.claim_rows(sims.get("link_theory"), noise)
        + annealing_s0.claim_rows(sims)
        + annealing_s1.claim_rows(sims)
        + geometry.claim_rows(sims)
        + au_empirical.claim_rows(full.get("alignment_uniformity"), paired, kinds)
        + pipeline_section.claim_rows(summary, params.report.min_gain_over_random)
        + paper_scale.claim_rows())
    headline_json = headline_record(out / "headline.json", context["claim_rows"], full, params)
    context["tables"] = sorted(f.name for f in (out / "tables").glob("*.csv"))
    if VENDORED.is_file():
        context["vendored"] = vendored_scripts(VENDORED)
        context["interactive"] = {"au_plane": au_plane_spec(encoders)}
    else:
        print(f"note: {VENDORED} missing; the page's interactive figures are omitted")
    context["schedule_comparisons"] = schedule_comparisons(params, paired)
    context["paired_table"] = paired_table(paired)
    # The MDE in paired SDs at the study's seed count and at 8, from the same power solver the
    # aggregate stage used (a mean of n values with SD 1 has se = 1/√n).
    context["mde_sds"] = {n: TInference(0.0, n ** -0.5, n - 1, n).minimal_detectable_effect()
                          for n in sorted({len(params.study.seeds), 8}) if n > 1}
    context["provenance"].update(stage_timings(out / "timings", stage_names(params)))
    # The text runs and the simulations record their own compute time: provenance lists them
    # beside the image runs' training times.
    for run in params.text_runs():
        f = out / "text" / "train" / paths.in_configuration(run.id) / "run.json"
        if f.is_file():
            r = read_json(f)
            context["provenance"]["timings"].append({
                "run": f"text_pretrain@{run.id}", "seconds": r["train_seconds"],
                "device": r["device"], "samples_per_s": r["samples_per_s"], "steps": r["steps"]})
    context["provenance"]["sim_seconds"] = {e: s.get("seconds") for e, s in sims.items()}
    html, md = render(context)
    # The page, its figures and the headline metrics are replaced together (io.replaced_together).
    with replaced_together() as outputs:
        fig_dir = outputs.dir(out / "figures")
        for name, png in figures.items():
            write_bytes_atomic(fig_dir / f"{name}.png", png)
        outputs.json(out / "headline.json", headline_json)
        outputs.text(out / "index.html", html)
        outputs.text(out / "REPORT.md", md)
    print(f"wrote {out / 'index.html'} and {out / 'REPORT.md'}")
