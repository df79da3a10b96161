"""DVC's top-level plots (reports/dvc.yaml) and the offline HTML template of `dvc plots show/diff`.

The plots file lists every run's TSV (DVC's top-level plots have no foreach/matrix or globs): it
must equal what `infonce_lab.devtools.dvc_plots` writes from params.yaml. `dvc plots show` and
`dvc plots diff HEAD` run in a scratch git repository holding dvc.yaml, reports/dvc.yaml,
params.yaml, .dvc/config, .dvc/plots and the plots' data files (git-tracked outputs of the default
study).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infonce_lab.devtools import dvc_plots, vega_offline
from infonce_lab.params import load_params
from infonce_lab.pipeline.dvc_plots import PLOTS_FILE

REPO = Path(__file__).resolve().parents[2]
LIBS = [lib.spec for lib in vega_offline.VENDORED]


def run_of(filename: str) -> str:
    """The run a DVCLive TSV belongs to: the folder above plots/metrics/ (DVC may shorten it)."""
    return filename.split("/plots/metrics/")[0].rsplit("/", 1)[-1]


def data_files(plots_yaml: dict) -> list[str]:
    """The files reports/dvc.yaml draws, from the project root."""
    files = []
    for item in plots_yaml["plots"]:
        (props,) = item.values()
        files += [(PLOTS_FILE.parent / f).as_posix() for f in props["y"]]
    return sorted(set(files))


class PlotsRepo:
    """A scratch git repository with what `dvc plots` reads, committed once."""

    def __init__(self, root: Path, source: Path = REPO) -> None:
        self.root = root
        for rel in ("dvc.yaml", PLOTS_FILE, "params.yaml", ".dvc/config", ".dvc/.gitignore"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, root / rel)
        shutil.copytree(source / ".dvc" / "plots", root / ".dvc" / "plots")
        missing = []
        for rel in data_files(yaml.safe_load((source / PLOTS_FILE).read_text())):
            if not (source / rel).is_file():
                missing.append(rel)
                continue
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, root / rel)
        assert not missing, f"plots data missing (run `dvc repro`): {missing[:5]}"
        self.env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t",
                    "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                    "GIT_COMMITTER_EMAIL": "t@t"}
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-qm", "plots")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.root, env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def dvc(self, *args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"dvc {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def shift_one_curve(self) -> str:
        """Change one run's loss in the workspace (for `dvc plots diff HEAD`); returns the run."""
        tsv = sorted(self.root.glob("reports/train/*/*/plots/metrics/train/loss.tsv"))[0]
        lines = tsv.read_text().splitlines()
        rows = [f"{s}\t{float(v) - 0.5}" for s, v in (ln.split("\t") for ln in lines[1:])]
        tsv.write_text("\n".join([lines[0], *rows]) + "\n")
        return tsv.parts[-5]


def build_plots_repo(root: Path) -> PlotsRepo:
    return PlotsRepo(root)


@pytest.fixture(scope="module")
def plots_repo(tmp_path_factory) -> PlotsRepo:
    return build_plots_repo(tmp_path_factory.mktemp("plots"))


def listed_runs(plots_yaml: str) -> dict[str, set[str]]:
    """``{plot id: run ids}`` of the curve plots in a dvc.yaml's top-level ``plots:``."""
    out: dict[str, set[str]] = {}
    for item in yaml.safe_load(plots_yaml).get("plots", []):
        if not isinstance(item, dict):
            continue
        (plot_id, props), = item.items()
        y = (props or {}).get("y")
        if isinstance(y, dict) and all(k.endswith(".tsv") for k in y):
            out[plot_id] = {Path(k).parts[-5] for k in y}
    return out


def test_the_plots_file_is_generated_from_the_study():
    text = (REPO / PLOTS_FILE).read_text()
    params = load_params(REPO / "params.yaml")
    assert text == dvc_plots.render(params), (
        f"{PLOTS_FILE} is stale: run `python -m infonce_lab.devtools.dvc_plots`")
    # the stage graph is hand-written: no top-level plots there
    assert "plots" not in yaml.safe_load((REPO / "dvc.yaml").read_text())
    listed = listed_runs(text)
    runs = {r.id for r in params.runs()}
    weince = {r.id for r in params.runs() if params.losses[r.loss].kind == "weince"}
    assert listed == {"train_loss": runs, "train_tau": runs, "train_lambda_mean": weince,
                      "train_alignment": runs, "train_uniformity": runs,
                      "text_train_loss": {r.id for r in params.text_runs()}}


def test_generator_check_and_write(tmp_path):
    shutil.copy2(REPO / "params.yaml", tmp_path / "params.yaml")
    args = ["--params", str(tmp_path / "params.yaml")]
    assert dvc_plots.main([*args, "--check"]) == 1  # no file yet
    assert dvc_plots.main(args) == 0
    assert dvc_plots.main([*args, "--check"]) == 0
    assert (tmp_path / PLOTS_FILE).read_text() == (REPO / PLOTS_FILE).read_text()
    # A smaller study: fewer seeds, no WEINCE → no lambda plot, and --check catches the change.
    raw = yaml.safe_load((tmp_path / "params.yaml").read_text())
    raw["study"].update(seeds=[7], losses=["infonce"])
    raw["primary"]["seeds"] = []
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    assert dvc_plots.main([*args, "--check"]) == 1
    assert dvc_plots.main(args) == 0
    listed = listed_runs((tmp_path / PLOTS_FILE).read_text())
    assert "train_lambda_mean" not in listed
    assert listed["train_loss"] == {"digits-resnet_digits-infonce-fixed_t02-7",
                                    "digits-resnet_digits-infonce-log_anneal-7",
                                    "digits-resnet_digits-infonce-cosine-7"}


def test_offline_template_is_configured_and_intact():
    from dvc.repo import Repo

    with Repo(str(REPO)) as dvc_repo:
        configured = dvc_repo.config["plots"].get("html_template")
    assert configured == "plots/offline.html"  # relative to .dvc/
    template = (REPO / ".dvc" / configured).read_text(encoding="utf-8")
    assert vega_offline.problems(template) == []
    for lib in vega_offline.VENDORED:
        licence = (REPO / ".dvc/plots/LICENSES" / f"{lib.name}.txt").read_text()
        assert "University of Washington Interactive Data Lab" in licence
        assert "Redistribution and use in source and binary forms" in licence


def _no_network_tags(html: str) -> None:
    assert "cdn.jsdelivr" not in html
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*[\"']?(https?:)?//",
                         html, re.I)
    for spec in LIBS:
        assert f'data-vendored="{spec}"' in html


def test_plots_show_renders_every_plot_offline(plots_repo):
    params = load_params(plots_repo.root / "params.yaml")
    shown = json.loads(plots_repo.dvc("plots", "show", "--json").stdout)
    assert "errors" not in shown, shown.get("errors")
    assert set(shown["data"]) == {"train_loss", "train_tau", "train_lambda_mean",
                                  "train_alignment", "train_uniformity", "text_train_loss",
                                  "summary_linear_test_acc", "summary_knn_test_acc",
                                  "text_sts_spearman"}
    values = {k: v[0]["content"]["data"]["values"] for k, v in shown["data"].items()}
    assert {run_of(p["filename"]) for p in values["train_loss"]} == {r.id for r in params.runs()}
    assert {run_of(p["filename"]) for p in values["text_train_loss"]} == {
        r.id for r in params.text_runs()}
    groups = {p["group"] for p in values["summary_linear_test_acc"]}
    assert {f"{r.dataset}-{r.backbone}-{r.loss}-{r.schedule}" for r in params.runs()} <= groups
    plots_repo.dvc("plots", "show", "--out", "shown")
    html = (plots_repo.root / "shown" / "index.html").read_text(encoding="utf-8")
    _no_network_tags(html)
    for plot_id in shown["data"]:
        assert f'id = "{plot_id}"' in html


def test_plots_diff_head(plots_repo):
    run = plots_repo.shift_one_curve()
    try:
        diff = json.loads(plots_repo.dvc("plots", "diff", "HEAD", "--json").stdout)
        assert "errors" not in diff, diff.get("errors")
        loss = diff["data"]["train_loss"][0]
        assert set(loss["revisions"]) == {"HEAD", "workspace"}
        by_rev: dict[str, dict[str, float]] = {}
        for p in loss["content"]["data"]["values"]:
            if run_of(p["filename"]) == run:
                by_rev.setdefault(p["rev"], {})[p["step"]] = float(p["loss"])
        assert by_rev["HEAD"] and by_rev["HEAD"].keys() == by_rev["workspace"].keys()
        for step, head in by_rev["HEAD"].items():
            assert by_rev["workspace"][step] == pytest.approx(head - 0.5, abs=1e-9)
        plots_repo.dvc("plots", "diff", "HEAD", "--out", "diffed")
        _no_network_tags((plots_repo.root / "diffed" / "index.html").read_text(encoding="utf-8"))
    finally:
        plots_repo.git("checkout", "--", ".")


def test_refresh_follows_the_study(tmp_path):
    """What the report stage calls: a stale file is rewritten, a current one is not touched."""
    from infonce_lab.pipeline.dvc_plots import refresh

    params = load_params(REPO / "params.yaml")
    assert refresh(params, tmp_path)  # absent: written
    path = tmp_path / PLOTS_FILE
    written = path.stat().st_mtime_ns
    assert not refresh(params, tmp_path) and path.stat().st_mtime_ns == written
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["study"]["seeds"] = [*raw["study"]["seeds"], 9]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    bigger = load_params(tmp_path / "params.yaml")
    assert refresh(bigger, tmp_path)
    assert path.read_text() == dvc_plots.render(bigger)
    assert "digits-resnet_digits-infonce-cosine-9" in path.read_text()
