"""The page from the declared sections: every section's rows, context and figures (a loop over
:func:`~infonce_lab.report.sections.declared`), the first screen's figures and summary, the
provenance, and the headline metrics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infonce_lab.evaluation import metrics
from infonce_lab.evaluation.stats import TInference
from infonce_lab.io import read_json
from infonce_lab.params import Configuration, Params
from infonce_lab.params.study import configurations
from infonce_lab.pipeline import paths
from infonce_lab.report import front
from infonce_lab.report.headline import LIMIT, headline
from infonce_lab.report.interactive import VENDORED, au_plane_spec, vendored_scripts
from infonce_lab.report.plotting import sim_figures
from infonce_lab.report.render import (
    build_context,
    paired_table,
    render,
    scoreboard,
    stage_timings,
)
from infonce_lab.report.sections import Inputs, declared, papers, sim_drawers
from infonce_lab.report.verdicts import ClaimRow


@dataclass(frozen=True)
class Page:
    html: str
    markdown: str
    papers: dict[str, str]  # paper id → its Markdown page (every row's rule, notes and cases)
    figures: dict[str, bytes]
    headline: dict[str, Any]


def headline_record(rows: list[ClaimRow], inputs: Inputs, params: Params) -> dict[str, Any]:
    """``reports/headline.json``: dvc.yaml's one ``metrics:`` file (report.headline)."""
    board = scoreboard(rows, papers(declared()))["sections"]
    counts = {k: sum(s[k] for s in board)
              for k in ("reproduced", "not_reproduced", "inconclusive", "not_run")}
    pr, full = params.primary, inputs.summary
    primary_groups = [Configuration(pr.dataset, pr.backbone, loss, pr.schedule).to_str()
                      for loss in pr.losses] if pr.seeds else []
    raw = f"{pr.dataset}-raw_pixels"
    numbers, left_out = headline(
        counts, full.get("primary") or {}, full["groups"], primary_groups,
        raw if raw in full["groups"] else None, list(pr.metrics),
        (full.get("text") or {}).get("groups", {}),
        [c.to_str() for c in configurations(params.grid_runs())])
    if left_out:
        print(f"note: headline.json keeps {LIMIT} numbers; left out: {', '.join(left_out)} "
              "(all in summary.json)")
    return {**numbers, "left_out": len(left_out)}


def _timings(params: Params, out: Path, inputs: Inputs) -> dict[str, Any]:
    """Stage timings, and the text runs' and simulations' own compute times beside the image
    runs' training times."""
    extra = stage_timings(out / "timings", params.stage_names())
    runs = []
    for run in params.text_runs():
        f = out / "text" / "train" / paths.in_configuration(run.id) / "run.json"
        if f.is_file():
            r = read_json(f)
            runs.append({"run": f"text_pretrain@{run.id}", "seconds": r["train_seconds"],
                         "device": r["device"], "samples_per_s": r["samples_per_s"],
                         "steps": r["steps"]})
    return {**extra, "text_runs": runs,
            "sim_seconds": {e: s.get("seconds") for e, s in inputs.sims.items()}}


def build_page(params: Params, inputs: Inputs, out: Path) -> Page:
    sections = declared()
    rows: list[ClaimRow] = []
    figures: dict[str, bytes] = {}
    numbers: dict[str, Any] = {}  # each section's context, under its id
    for section in sections:
        rows += section.claim_rows(inputs)
        if section.context is not None:
            numbers[section.id] = section.context(inputs)
        if section.figures is not None:
            figures.update({k: v for k, v in section.figures(inputs).items() if v is not None})
    figures.update(sim_figures(inputs.sims, sim_drawers(sections)))
    pr = params.primary
    margin = pr.min_effect_points
    figures.update(front.figures(inputs.groups, rows, params.study.model_dump(), margin))
    folders = {r.id: out / "train" / paths.in_configuration(r.id) for r in params.runs()}
    context = build_context(params, dict(inputs.groups), figures, folders)
    if clash := set(numbers) & set(context):
        raise ValueError(f"section ids {sorted(clash)} clash with the page's own context keys")
    context.update(numbers)
    few = params.evaluation.few_labels
    context["primary"] = {
        **pr.model_dump(), "labels": [metrics.BY_NAME[m].label for m in pr.metrics],
        "plain": (f"dataset {pr.dataset} (kind {params.datasets[pr.dataset].kind}), backbone "
                  f"{pr.backbone} (kind {params.backbones[pr.backbone].kind}), "
                  f"{params.training.epochs} epochs at batch {params.training.batch_size}; the "
                  f"few-label metrics from {few.per_class} labels per class, {few.draws} draws")
        if pr.seeds else ""}
    context.update(claim_rows=rows, paired=dict(inputs.paired),
                   selection=inputs.summary.get("selection", {}),
                   tables=sorted(f.name for f in (out / "tables").glob("*.csv")),
                   paired_table=paired_table(dict(inputs.paired)))
    if VENDORED.is_file():
        context["vendored"] = vendored_scripts(VENDORED)
        context["interactive"] = {"au_plane": au_plane_spec(inputs.encoders)}
    else:
        print(f"note: {VENDORED} missing; the page's interactive figures are omitted")
    # The MDE in paired SDs at the study's seed count and at 8, from the same power solver the
    # aggregate stage used (a mean of n values with SD 1 has se = 1/√n).
    context["mde_sds"] = {n: TInference(0.0, n ** -0.5, n - 1, n).minimal_detectable_effect()
                          for n in sorted({len(params.study.seeds), 8}) if n > 1}
    context["provenance"].update(_timings(params, out, inputs))
    context["provenance"]["timings"] += context["provenance"].pop("text_runs")
    html, markdown, pages = render(context, sections)
    return Page(html, markdown, pages, figures, headline_record(rows, inputs, params))
