"""The whole DAG on the shipped tiny profile (profiles/tiny.yaml, what `make smoke` runs), in a
temporary copy of the repository.

Checks: outputs and sane metrics; the report shows the numbers of reports/metrics; WEINCE's telemetry reaches the report; a second
`dvc repro` runs nothing; changing one loss's parameter re-runs exactly that run's stages and
what aggregates them; invalid params fail and keep the outputs; push → wipe cache → pull → no-op.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from dvc_queue import DvcQueue

from infonce_lab.devtools.smoke import prepare
from infonce_lab.report.headline import LIMIT

pytestmark = pytest.mark.pipeline
REPO_ROOT = Path(__file__).resolve().parents[2]

RUNS = {"infonce": "digits-tiny-infonce-fixed_t05-1", "wnce": "digits-tiny-wnce-fixed_t05-1"}
# the tiny profile's primary block: wnce − infonce, and the label oracle's control family
PRIMARY_RUNS = {f"digits-tiny-{loss}-fixed_t02-{seed}" for loss in ("infonce", "wnce", "infonce_oracle")
                for seed in (1, 2)}
TEXT_RUNS = {"infonce": "gensim_lee-tiny_bert-infonce-fixed_t05-1",
             "wnce": "gensim_lee-tiny_bert-wnce-fixed_t05-1"}


def cfg(run: str) -> str:
    """The run's configuration: its stage instance's suffix and its models' folder."""
    return run.rsplit("-", 1)[0]


def in_cfg(run: str) -> str:
    return f"{cfg(run)}/{run}"


PRIMARY_STAGES = {f"pretrain_primary@{cfg(r)}" for r in PRIMARY_RUNS}


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        bindir = str(Path(sys.executable).parent)
        self.env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
                    "DVC_NO_ANALYTICS": "1", "OMP_NUM_THREADS": "2",
                    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                    "GIT_COMMITTER_EMAIL": "t@t"}
        self.dvc = [sys.executable, "-m", "dvc"]

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(cmd), cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=900)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def repro(self, check: bool = True) -> tuple[set[str], subprocess.CompletedProcess]:
        proc = self.run(*self.dvc, "repro", check=check)
        return set(re.findall(r"Running stage '([^']+)'", proc.stdout)), proc

    def status(self) -> str:
        return self.run(*self.dvc, "status").stdout

    def edit_params(self, fn) -> None:  # noqa: ANN001
        p = self.root / "params.yaml"
        raw = yaml.safe_load(p.read_text())
        fn(raw)
        p.write_text(yaml.safe_dump(raw, sort_keys=False))


def _tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    """The repository as `make smoke` prepares it: profiles/tiny.yaml in a copy of its own."""
    root = tmp_path_factory.mktemp("lab")
    r = Repo(root)
    prepare(REPO_ROOT, root, "tiny", r.env)
    ran, _ = r.repro()
    assert {f"pretrain@{cfg(RUNS['infonce'])}", f"pretrain@{cfg(RUNS['wnce'])}",
            "diagnose@digits", "noise_floor", "step_cost", "simulate@s0", "download_text@gensim_lee",
            f"text_pretrain@{cfg(TEXT_RUNS['wnce'])}", "evaluate@digits",
            "text_evaluate@gensim_lee", "aggregate", "report", "check_params"} | PRIMARY_STAGES <= ran
    return r


def test_outputs_and_sane_metrics(repo):
    root = repo.root
    for run in RUNS.values():
        assert (root / "models/vision/digits" / in_cfg(run) / "model.pt").is_file()
        assert (root / "models/vision/digits" / in_cfg(run) / "checkpoints/epoch_0001.pt").is_file()
        assert (root / "data/features/vision/digits" / run / "test.npz").is_file()
        assert (root / "reports/train" / in_cfg(run) / "plots/metrics/train/loss.tsv").is_file()
        m = json.loads((root / "reports/metrics/runs/digits" / f"{run}.json").read_text())
        for section in ("linear", "knn"):
            for split in ("val_acc", "test_acc"):
                assert 0.15 < m[section][split] <= 1.0  # well above chance (0.1) even when tiny
    manifest = json.loads((root / "data" / "raw" / "digits" / "MANIFEST.json").read_text())
    assert manifest["n_train"] + manifest["n_test"] == 1797
    groups = json.loads((root / "reports" / "summary.json").read_text())["groups"]
    assert set(groups) == {"digits-tiny-infonce-fixed_t05", "digits-tiny-wnce-fixed_t05",
                           "digits-tiny-infonce-fixed_t02", "digits-tiny-wnce-fixed_t02",
                           "digits-tiny-infonce_oracle-fixed_t02",
                           "digits-tiny-random_init", "digits-raw_pixels"}


def test_primary_comparison_is_decided_on_its_own_runs(repo):
    summary = json.loads((repo.root / "reports" / "summary.json").read_text())
    key = "digits-tiny/wnce_vs_infonce@fixed_t02/few.probe_test_acc"
    oracle = key.replace("wnce_vs", "infonce_oracle_vs")
    assert set(summary["primary"]) == {k.replace("few.probe", m) for k in (key, oracle)
                                       for m in ("few.probe", "few.knn")}
    assert summary["primary"][key]["family"] == "primary"
    assert summary["primary"][oracle]["family"] == "control"  # the label oracle trained end to end
    pair = summary["primary"][key]
    assert set(pair["per_seed"]) == {"1", "2"} and pair["mde_80"] > 0
    runs = {f"digits-tiny-{loss}-fixed_t02-{seed}": loss for loss in ("infonce", "wnce")
            for seed in (1, 2)}
    few = {r: json.loads((repo.root / "reports/metrics/runs/digits" / f"{r}.json").read_text())
           ["few"]["probe_test_acc"] for r in runs}
    for seed in ("1", "2"):
        assert pair["per_seed"][seed] == pytest.approx(
            few[f"digits-tiny-wnce-fixed_t02-{seed}"] - few[f"digits-tiny-infonce-fixed_t02-{seed}"])
    # the grid's comparisons never reach into the primary block
    assert not any("fixed_t02" in k for k in summary["paired"])
    # the diagnose stage takes the primary's runs of tails.primary_losses (infonce), no others
    tails = repo.root / "reports/tails/runs/digits"
    assert (tails / "digits-tiny-infonce-fixed_t02-1.json").exists()
    assert not (tails / "digits-tiny-wnce-fixed_t02-1.json").exists()
    html = (repo.root / "reports" / "index.html").read_text()
    assert "Pre-registered primary comparison" in html
    assert "wnce beats infonce (pre-registered" in html and "MDE" in html


def markdown_report(root: Path) -> str:
    """REPORT.md and the per-paper pages it links (every table lives on one of them)."""
    pages = [root / "reports" / "REPORT.md", *sorted((root / "reports" / "details").glob("*.md"))]
    return "\n".join(p.read_text() for p in pages)


def test_report_numbers_equal_the_metrics(repo):
    root = repo.root
    groups = json.loads((root / "reports" / "summary.json").read_text())["groups"]
    html = (root / "reports" / "index.html").read_text()
    md = markdown_report(root)
    for loss, run in RUNS.items():
        m = json.loads((root / "reports/metrics/runs/digits" / f"{run}.json").read_text())
        g = groups[f"digits-tiny-{loss}-fixed_t05"]
        assert g["linear.test_acc"]["mean"] == pytest.approx(np.mean([m["linear"]["test_acc"]]))
        assert f"{m['linear']['test_acc']:.3f}" in html and f"{m['linear']['test_acc']:.3f}" in md
        assert f"{m['knn']['test_acc']:.3f}" in html
    assert html.count("data:image/png;base64,") >= 2
    # self-contained: nothing is loaded from the network (the arXiv links are only links)
    assert not re.search(r'(src|srcset|data)=["\']?https?:', html)
    assert not re.search(r"<(link|script)[^>]*https?:", html) and "@import" not in html
    assert "https://arxiv.org/abs/2606.00262" in html


def test_tail_diagnostics_per_checkpoint(repo):
    root = repo.root
    for run in RUNS.values():
        m = json.loads((root / "reports/tails/runs/digits" / f"{run}.json").read_text())
        assert m["final_epoch"] == 2 and set(m) == {"epoch_1", "epoch_2", "final_epoch"}
        for epoch in ("epoch_1", "epoch_2"):
            assert -1.0 < m[epoch]["pot"]["xi"] <= 1.0
            pot = m[epoch]["pot"]
            # an estimate of the cosines' upper end: above the threshold, near the cap of 1
            assert pot["endpoint"] is None or pot["u"] < pot["endpoint"] < 1.1
            for placement in ("inside", "outside"):
                assert 0.0 <= m[epoch]["link"][placement]["lambda_hat"] <= 1.0
        plots = json.loads((root / "reports/tails/plots/digits" / f"{run}.json").read_text())
        assert len(plots["epoch_2"]["pot"]["qq"]["p"]) == 99
    tails = json.loads((root / "reports" / "summary.json").read_text())["tails"]
    assert tails["digits-tiny-wnce-fixed_t05"]["epochs"] == [1, 2]
    noise = json.loads((root / "reports" / "tails" / "noise_floor.json").read_text())
    assert noise["mse_softmax"][-1] > noise["mse_weibit"][-1]


def test_text_study_outputs(repo):
    root = repo.root
    manifest = json.loads((root / "data/raw/text/gensim_lee/MANIFEST.json").read_text())
    assert manifest["counts"]["n_train"] == 300 and manifest["counts"]["n_sts_test_pairs"] == 1225
    for run in TEXT_RUNS.values():
        assert (root / "models/text/gensim_lee" / in_cfg(run) / "model.safetensors").is_file()
        assert (root / "data/features/text/gensim_lee" / run / "features.npz").is_file()
        loss = (root / "reports/text/train" / in_cfg(run) / "plots/metrics/train/loss.tsv"
                ).read_text()
        assert len(loss.splitlines()) == 4  # header + 3 steps
        m = json.loads((root / "reports/metrics/text/runs/gensim_lee" / f"{run}.json").read_text())
        assert -100.0 <= m["sts"]["test_spearman"] <= 100.0 and m["sts"]["n_test_pairs"] == 1225
        assert 0.0 <= m["linear"]["test_acc"] <= 1.0 and m["encoder"]["step"] == 3
    base = json.loads((root / "reports/metrics/text/baselines/gensim_lee.json").read_text())
    assert set(base) == {"tfidf", "untuned-tiny_bert"}
    text = json.loads((root / "reports/summary.json").read_text())["text"]
    assert set(text["groups"]) == {"gensim_lee-tiny_bert-infonce-fixed_t05",
                                   "gensim_lee-tiny_bert-wnce-fixed_t05",
                                   "gensim_lee-tiny_bert-untuned", "gensim_lee-tfidf"}
    html = (root / "reports/index.html").read_text()
    m = json.loads((root / "reports/metrics/text/runs/gensim_lee"
                    / f"{TEXT_RUNS['wnce']}.json").read_text())
    assert "Sentence embeddings" in html and f"{m['sts']['test_spearman']:.2f}" in html


def test_text_tail_diagnostics(repo):
    out = json.loads((repo.root / "reports/tails/text/gensim_lee.json").read_text())
    assert set(out) == {"tiny_bert"}
    m = out["tiny_bert"]["metrics"]
    assert m["bank"]["anchors"] == 4 * 2 * 32 and m["bank"]["candidates"] == 2 * 32 - 1
    assert m["bank"]["batches"] == 4 and m["pot"]["n_scores"] == 4 * 32 * 31 // 2
    assert 0.0 <= m["views"]["positive_top1_share"] <= 1.0
    assert 0.0 <= m["link"]["inside"]["lambda_hat"] <= 1.0
    assert m["link"]["inside"]["n_batches"] == 4
    summary = json.loads((repo.root / "reports/summary.json").read_text())["text_tails"]
    assert summary["gensim_lee-tiny_bert"]["per_seed"]["0"]["pot.xi"] == {"0": m["pot"]["xi"]}
    # every tail claim row shows it as context, beside the image runs, never counted
    assert "gensim_lee · tiny_bert as shipped" in markdown_report(repo.root)


def test_second_repro_is_a_noop(repo):
    assert "up to date" in repo.status()
    ran, _ = repo.repro()
    assert ran == set()


def test_weince_telemetry_and_report(repo):
    folder = repo.root / "reports/train" / in_cfg(RUNS["wnce"]) / "plots/metrics/train"
    lam = (folder / "lambda_mean.tsv").read_text().splitlines()
    assert len(lam) > 1 and all(0.0 <= float(r.split("\t")[1]) <= 1.0 for r in lam[1:])
    for name in ("lambda_frac_gt_half", "rho0", "beta_hat_q50", "tau"):
        assert (folder / f"{name}.tsv").is_file()
    assert "WEINCE lambda statistics" in (repo.root / "reports" / "index.html").read_text()


def test_changing_one_loss_reruns_only_its_run(repo):
    repo.edit_params(lambda raw: raw["losses"]["wnce"].update(kappa_rho=5.0))
    status = repo.status()
    assert f"pretrain@{cfg(RUNS['wnce'])}" in status and cfg(RUNS["infonce"]) not in status
    assert "download" not in status and "simulate" not in status
    ran, _ = repo.repro()
    # The text study shares the loss section: its WEINCE run re-trains too, nothing else of it;
    # each dataset's evaluation and diagnostics (one stage each for all its runs) follow; the
    # overhead measurement times this loss too.
    assert ran == {f"pretrain@{cfg(RUNS['wnce'])}", "evaluate@digits", "diagnose@digits",
                   f"text_pretrain@{cfg(TEXT_RUNS['wnce'])}", "text_evaluate@gensim_lee",
                   "step_cost", "aggregate", "report", "check_params"} | {s for s in PRIMARY_STAGES
                                                             if "-wnce-" in s}


def test_invalid_params_keep_outputs(repo):
    before = _tree_digest(repo.root / "models") | {
        "summary": hashlib.sha256((repo.root / "reports/summary.json").read_bytes()).hexdigest()}
    original = (repo.root / "params.yaml").read_text()
    try:
        repo.edit_params(lambda raw: raw["training"].update(batch_size=1))
        ran, proc = repo.repro(check=False)
        assert proc.returncode != 0
        assert "training.batch_size = 1" in proc.stdout + proc.stderr
        after = _tree_digest(repo.root / "models") | {
            "summary": hashlib.sha256((repo.root / "reports/summary.json").read_bytes()).hexdigest()}
        assert after == before
    finally:
        (repo.root / "params.yaml").write_text(original)
    assert "up to date" in repo.status()


def test_an_unknown_top_level_key_fails_dvc_repro(repo):
    """No stage lists an unknown key, so DVC alone would run nothing and exit 0: the
    check_params stage (params.yaml is its file dep) refuses it, naming the key, and nothing else
    runs."""
    lock = (repo.root / "dvc.lock").read_bytes()
    original = (repo.root / "params.yaml").read_text()
    try:
        (repo.root / "params.yaml").write_text(original + "\ntrainig: {epochs: 3}\n")
        ran, proc = repo.repro(check=False)
        assert proc.returncode != 0
        assert ran == {"check_params"}
        assert "trainig" in proc.stdout + proc.stderr
        assert (repo.root / "dvc.lock").read_bytes() == lock
    finally:
        (repo.root / "params.yaml").write_text(original)
    # params.yaml is back to the bytes dvc.lock holds: nothing to run, not even the check.
    assert "up to date" in repo.status()


@pytest.mark.parametrize("hostile", [
    ("training", "launcher", "torchrun; touch PWNED #", "training.launcher"),
    ("training", "launcher", "torchrun --x=$(touch PWNED)", "training.launcher"),
    # check_params refuses the name before DVC would look for its params entry.
    ("study", "losses", ["infonce", "x;touch PWNED;#"], "study.losses.1 = 'x;touch PWNED;#'"),
])
def test_params_never_reach_a_shell(repo, hostile):
    """Through `dvc exp run -S` (which skips `make repro`'s check) nothing from params runs in a
    shell: the value is refused (by the stage, or by DVC), the run fails, outputs and dvc.lock
    are kept."""
    section, key, value, named = hostile
    lock = (repo.root / "dvc.lock").read_bytes()
    before = _tree_digest(repo.root / "models")
    original = (repo.root / "params.yaml").read_text()
    try:
        repo.edit_params(lambda raw: raw[section].update({key: value}))
        ran, proc = repo.repro(check=False)
        assert proc.returncode != 0
        assert named in proc.stdout + proc.stderr
        assert not list(repo.root.rglob("PWNED"))
        assert (repo.root / "dvc.lock").read_bytes() == lock
        assert _tree_digest(repo.root / "models") == before
    finally:
        (repo.root / "params.yaml").write_text(original)
    assert "up to date" in repo.status()


# Every stage kind, SIGKILLed at one of the writers' injected points (io.kill_point): "rename"
# (a file written, not renamed), "swap" (a folder swap between its renames), "journal" (a
# stage's outputs staged and journaled, none renamed), "commit" (half of them renamed; ":n" the
# n-th commit: a pretrain's first is its seed's resume folder, the second its outputs; a text
# pretrain saves its model folder first, so its outputs are the third — asserted below). Each
# next stage finishes the previous one's journal before it starts (stage.stage); the last kill
# removes an output, so the closing `dvc repro` has to run its stage.
KILLS = [("check_params", "rename"), ("download@digits", "swap"),
         (f"pretrain@{cfg(RUNS['infonce'])}", "commit:2"), ("evaluate@digits", "journal"),
         ("diagnose@digits", "commit"), ("noise_floor", "rename"), ("step_cost", "rename"),
         ("simulate@s0", "rename"),
         ("download_text@gensim_lee", "swap"), ("tokenize_text@gensim_lee-tiny_bert", "swap"),
         (f"text_pretrain@{cfg(TEXT_RUNS['infonce'])}", "commit:3"),
         ("text_evaluate@gensim_lee", "journal"), ("aggregate", "commit"), ("report", "swap")]


def _leftovers(root: Path) -> list[str]:
    skip = {".git", ".dvc", ".venv"}
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if not skip & set(p.relative_to(root).parts)
                  and (p.name.endswith((".tmp", ".old"))
                       or p.parent.name == ".journal"))


def test_every_stage_kind_killed_mid_write_recovers_with_no_hand_step(repo):
    root = repo.root
    kept = {"models": _tree_digest(root / "models"),
            "metrics": _tree_digest(root / "reports/metrics"),
            "tails": _tree_digest(root / "reports/tails/runs"),
            "sims": _tree_digest(root / "reports/sims"),
            "tokens": _tree_digest(root / "data/tokens")}
    for name, point in KILLS:
        proc = subprocess.run([sys.executable, f"stages/{name.split('@')[0]}.py"], cwd=root,
                              env={**repo.env, "DVC_STAGE": name, "INFONCE_LAB_KILL_AT": point},
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == -9, f"{name} was not killed at {point}: {proc.stderr[-2000:]}"
        journals = [json.loads(j.read_text()) for j in (root / ".journal").glob("*.json")]
        assert bool(journals) == (point != "rename"), (name, point)  # every swap is journaled
        if name.startswith(("pretrain@", "text_pretrain@")):  # killed in the outputs' commit
            assert any(e["target"].startswith("models/") for j in journals
                       for e in j["entries"]), (name, journals)
    assert not (root / "reports/figures").exists()  # the report's swap was cut in half
    ran, _ = repo.repro()
    assert "report" in ran, ran
    assert "up to date" in repo.status()
    assert _leftovers(root) == []
    # Everything the kills interrupted is back, bit for bit (training and scoring are seeded).
    assert kept == {"models": _tree_digest(root / "models"),
                    "metrics": _tree_digest(root / "reports/metrics"),
                    "tails": _tree_digest(root / "reports/tails/runs"),
                    "sims": _tree_digest(root / "reports/sims"),
                    "tokens": _tree_digest(root / "data/tokens")}
    assert (root / "reports/figures").is_dir() and (root / "reports/index.html").is_file()


def test_push_wipe_pull_roundtrip(repo, tmp_path):
    root = repo.root
    repo.run(*repo.dvc, "remote", "add", "--local", "-d", "scratch", str(tmp_path / "remote"))
    repo.run(*repo.dvc, "push")
    models_before = _tree_digest(root / "models")
    for rel in (".dvc/cache", "models", "data/features", "data/raw"):
        shutil.rmtree(root / rel)
    assert "up to date" not in repo.status()
    repo.run(*repo.dvc, "pull")
    assert _tree_digest(root / "models") == models_before
    assert "up to date" in repo.status()
    ran, _ = repo.repro()
    assert ran == set()


def test_dvc_plots_follow_the_study(repo):
    """DVC's top-level plots (reports/dvc.yaml) follow the tiny study with no manual step (the
    fixture only edited params.yaml; the report stage rewrote the list) and draw every run
    offline."""
    repo.run(sys.executable, "-m", "infonce_lab.devtools.dvc_plots", "--check")
    shown = json.loads(repo.run(*repo.dvc, "plots", "show", "--json").stdout)
    assert "errors" not in shown, shown.get("errors")

    def runs(plot_id: str) -> set[str]:
        values = shown["data"][plot_id][0]["content"]["data"]["values"]
        return {v["filename"].split("/plots/metrics/")[0].rsplit("/", 1)[-1] for v in values}

    assert runs("train_loss") == runs("train_tau") == set(RUNS.values()) | PRIMARY_RUNS
    assert runs("train_lambda_mean") == {RUNS["wnce"]} | {  # WEINCE runs only
        r for r in PRIMARY_RUNS if "-wnce-" in r}
    assert runs("text_train_loss") == set(TEXT_RUNS.values())
    repo.run(*repo.dvc, "plots", "show", "--out", "plots_check")
    html = (repo.root / "plots_check" / "index.html").read_text(encoding="utf-8")
    assert "cdn.jsdelivr" not in html and 'data-vendored="vega@' in html
    shutil.rmtree(repo.root / "plots_check")
    assert "up to date" in repo.status()  # plots are not stages: nothing to re-run


def test_dvc_metrics_are_the_headline(repo):
    """`dvc metrics show` (and so `dvc exp show`) reads one file of at most LIMIT numbers, one of
    them per grid configuration."""
    shown = json.loads(repo.run(*repo.dvc, "metrics", "show", "--json").stdout)
    files = {f for rev in shown.values() for f in rev.get("data", {})}
    assert files == {"reports/headline.json"}, files
    numbers = json.loads((repo.root / "reports/headline.json").read_text())
    assert 4 < len(numbers) <= LIMIT + 1 and numbers["left_out"] == 0  # the numbers + the count
    assert {k for k in numbers if k.startswith("grid.")} == {
        f"grid.{loss}-fixed_t05.few.probe_test_acc" for loss in ("infonce", "wnce")}
    assert numbers["verdicts.reproduced"] + numbers["verdicts.not_reproduced"] >= 1
    assert any(k.startswith("primary.wnce_vs_infonce.") for k in numbers)
    groups = json.loads((repo.root / "reports/summary.json").read_text())["groups"]
    infonce = next(g for gid, g in groups.items() if gid.endswith("-infonce-fixed_t05"))
    assert numbers["grid.infonce-fixed_t05.few.probe_test_acc"] == pytest.approx(
        infonce["few.probe_test_acc"]["mean"], abs=1e-6)  # summary.json's unit, not points


def test_the_experiment_queue_runs_a_study_matrix(repo):
    """Last in this file (it commits the results): two experiments through DVC's queue with two
    workers, each re-running only what its change reaches, both in `dvc exp show`. The workers
    are stopped whatever happens (tests/e2e/dvc_queue.py says why that takes care)."""
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "tiny study results")
    # One change the verdicts' simulations see, one the grid's headline figures see.
    for change in ("simulation.s0.chains=10", "evaluation.few_labels.per_class=5"):
        repo.run(*repo.dvc, "exp", "run", "--queue", "-S", change)
    queue = DvcQueue(repo.root, repo.env, repo.dvc)
    try:
        queue.start(2)
        states = queue.wait(expected=2, deadline_s=600)
        assert sorted(states.values()) == ["success", "success"], queue.diagnosis(str(states))
    finally:
        queue.stop()
    assert queue.processes() == {}
    rows = list(csv.DictReader(io.StringIO(repo.run(*repo.dvc, "exp", "show", "--csv").stdout)))
    changed = sorted((r.get("simulation.s0.chains") == "10",
                      r.get("evaluation.few_labels.per_class") == "5")
                     for r in rows if r.get("Experiment"))
    assert changed == [(False, True), (True, False)], rows
    assert all(r.get("verdicts.reproduced") not in (None, "", "-") for r in rows)
    # The README's walk ends here: `infonce-lab exps` shows each changed param and the headline
    # figures it moved, within 120 columns.
    table = repo.run(str(Path(repo.dvc[0]).with_name("infonce-lab")), "exps").stdout
    lines = table.splitlines()
    assert max(map(len, lines)) <= 120, table
    keys = {line.split()[0] for line in lines[1:] if line.strip() and not line.startswith("─")}
    assert {"simulation.s0.chains", "evaluation.few_labels.per_class"} <= keys, table
    assert any(k.startswith("grid.") for k in keys), table  # few-label figures moved
