"""``reports/dvc.yaml``: DVC's top-level ``plots:``, generated from params.yaml's study lists.

``dvc plots show`` / ``dvc plots diff`` draw these; DVC reads top-level plots from every dvc.yaml of
the project, with paths relative to the file, so the generated list lives beside what it draws
and the stage graph (dvc.yaml) stays hand-written. One plot per training signal with every run of
the study as a line needs every run's TSV named as a key of the plot's ``y:`` mapping: DVC 3's
top-level plots take ``${}`` interpolation but no ``foreach``/``matrix`` and no globs, and a
directory as a plot id makes one plot per file, not one line per run (it would also pick up the
folders of runs no longer in the study, which ``persist: true`` keeps). So the file lists run
ids, and :func:`refresh` writes it from params. The report stage calls it, so a ``dvc exp run -S
study.seeds=…`` carries its own plots list into the experiment's commit (as DVCLive writes its
plots into dvc.yaml); ``python -m infonce_lab.devtools.dvc_plots`` does the same by hand, and
``--check`` in a test.
"""


from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from infonce_lab.io import write_text_atomic
from infonce_lab.params import Params
from infonce_lab.pipeline.paths import TEXT_TRAIN, TRAIN, in_configuration

PLOTS_FILE = Path("reports/dvc.yaml")  # from the project root; its paths are from its folder

# (signal, title, losses it exists for: None = every run, else the loss kinds that log it)
VISION_SIGNALS: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("loss", "Training loss", None),
    ("tau", "Temperature tau", None),
    ("lambda_mean", "WEINCE mean lambda (WEINCE runs)", ("weince",)),
    ("alignment", "Alignment of the batch's positive pairs", None),
    ("uniformity", "Uniformity of the batch", None),
)
TEXT_SIGNALS: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("loss", "Text study (SimCSE): training loss", None),
)
# Per-configuration summaries: (plot id, file, value column, category column, title).
SUMMARIES = (
    ("summary_linear_test_acc", "tables/summary.csv", "linear.test_acc.mean", "group",
     "Linear probe test accuracy, mean over seeds, per configuration"),
    ("summary_knn_test_acc", "tables/summary.csv", "knn.test_acc.mean", "group",
     "Weighted kNN test accuracy, mean over seeds, per configuration"),
    ("text_sts_spearman", "tables/text.csv", "sts.test_spearman", "encoder_id",
     "Text study: STS Spearman x 100 per encoder"),
)

HEADER = """\
# Generated: do not edit. DVC's top-level plots for `dvc plots show` / `dvc plots diff` (rendered
# offline: .dvc/config's plots.html_template), paths from this folder. Written from params.yaml's
# study lists by the report stage and by `python -m infonce_lab.devtools.dvc_plots`: DVC's
# top-level plots have no foreach/matrix or globs, and a directory plot gives one plot per file,
# so every run's file is listed; a test checks the list matches params.yaml.
"""


def _tsv(prefix: Path, run: str, signal: str) -> str:
    here = prefix.relative_to(PLOTS_FILE.parent)
    return (here / in_configuration(run) / "plots/metrics/train" / f"{signal}.tsv").as_posix()


def _curves(plot_id: str, title: str, files: list[str], signal: str) -> dict[str, Any]:
    return {plot_id: {"title": title, "template": "runs", "x": "step",
                      "y": {f: signal for f in files}, "x_label": "step", "y_label": signal}}


def plots_section(params: Params) -> list[dict[str, Any]]:
    """The top-level ``plots:`` list for these params."""
    plots: list[dict[str, Any]] = []
    for prefix, stem, runs, signals in (
        (TRAIN, "train", params.runs(), VISION_SIGNALS),
        (TEXT_TRAIN, "text_train", params.text_runs(), TEXT_SIGNALS),
    ):
        for signal, title, kinds in signals:
            files = [_tsv(prefix, r.id, signal) for r in runs
                     if kinds is None or params.losses[r.loss].kind in kinds]
            if files:
                plots.append(_curves(f"{stem}_{signal}", title, files, signal))
    for plot_id, path, value, category, title in SUMMARIES:
        plots.append({plot_id: {"title": title, "template": "bar_horizontal_sorted",
                                "x": value, "y": {path: category},
                                "x_label": value, "y_label": category}})
    return plots


def render(params: Params) -> str:
    """The text of :data:`PLOTS_FILE` for these params."""
    body = yaml.safe_dump({"plots": plots_section(params)}, sort_keys=False, width=200)
    return HEADER + body


def refresh(params: Params, root: Path = Path()) -> bool:
    """Write ``root``/:data:`PLOTS_FILE` if it does not hold :func:`render`'s text; True when it
    was written."""
    path = root / PLOTS_FILE
    wanted = render(params)
    if path.is_file() and path.read_text() == wanted:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, wanted)
    return True
