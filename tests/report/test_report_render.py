"""The report's scoreboard (paper claims per section, self-checks apart) and stage times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infonce_lab.report.render import by_section, scoreboard, stage_timings
from infonce_lab.report.sections import PAPERS
from infonce_lab.report.verdicts import (
    ClaimRow,
    Evidence,
    inconclusive,
    not_reproduced,
    not_run,
    reproduced,
)

REPO = Path(__file__).resolve().parents[2]


def test_scoreboard_counts_paper_claims_per_section_and_self_checks_apart():
    rows = [
        ClaimRow("weince", "t", "a", "q", "r", "x", reproduced()),
        ClaimRow("weince", "t", "b", "q", "r", "x", not_run("apply a profile")),
        ClaimRow("weince", "u", "c", "q", "r", "x", inconclusive("wide")),
        ClaimRow("annealing", "s0", "d", "q", "r", "x", not_reproduced()),
        ClaimRow("annealing", "s0", "barrier", "q", "r", "x", reproduced(), self_check=True),
        ClaimRow("au", "v", "e", "q", "r", "x", reproduced()),
    ]
    rows.append(ClaimRow("weince", "t", "tuning", "q", "r", "x", reproduced(),
                         evidence=Evidence.CONTEXT))  # shown, never counted
    board = scoreboard(rows, PAPERS)
    sec = {s["id"]: s for s in board["sections"]}
    assert [sec["weince"][k] for k in ("n", "reproduced", "not_reproduced", "inconclusive",
                                       "not_run")] == [3, 1, 0, 1, 1]
    assert sec["annealing"]["n"] == 1 and sec["annealing"]["not_reproduced"] == 1
    assert sec["geometry"]["n"] == 0 and sec["pipeline"]["n"] == 0
    assert board["self_checks"] == {"n": 1, "reproduced": 1, "not_reproduced": 0,
                                    "inconclusive": 0, "not_run": 0}
    assert [r.claim for r in by_section(rows, PAPERS)["annealing"]] == ["d"]
    assert "tuning" in [r.claim for r in by_section(rows, PAPERS)["weince"]]


def test_stage_timings_sum_per_kind_and_skip_stale_files(tmp_path: Path):
    for name, sec, proc in (("pretrain@r1", 10.0, 13.0), ("pretrain@r2", 20.0, 24.0),
                            ("aggregate", 1.0, 3.5), ("pretrain@removed", 99.0, 99.0)):
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"stage": name, "seconds": sec, "process_seconds": proc, "finished": "t"}))
    t = stage_timings(tmp_path, ["pretrain@r1", "pretrain@r2", "aggregate", "evaluate@r1"])
    assert [s["stage"] for s in t["stages"]] == ["pretrain@r1", "pretrain@r2", "aggregate"]
    kinds = {k["kind"]: k for k in t["stage_kinds"]}
    assert kinds["pretrain"] == {"kind": "pretrain", "count": 2, "seconds": 30.0,
                                 "process_seconds": 37.0, "max_seconds": 20.0}
    assert t["stages_total"] == {"seconds": 31.0, "process_seconds": 40.5}


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(1.8e9 + seconds, UTC).isoformat().replace("+00:00", "Z")


def test_fixed_fraction_is_one_minus_work_over_the_span_of_one_run(tmp_path: Path):
    # (name, work, process, end): starts at 0, 15 and 40 (end − process); the span is 0 → 43.5
    for name, sec, proc, end in (("pretrain@r1", 10.0, 13.0, 13.0), ("pretrain@r2", 20.0, 24.0, 39.0),
                                 ("aggregate", 1.0, 3.5, 43.5)):
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"stage": name, "seconds": sec, "process_seconds": proc, "finished": _stamp(end)}))
    total = stage_timings(tmp_path, ["pretrain@r1", "pretrain@r2", "aggregate"])["stages_total"]
    assert total["wall_seconds"] == pytest.approx(43.5, abs=1e-3)
    assert total["fixed_fraction"] == pytest.approx(1 - 31.0 / 43.5, abs=1e-4)
    # aggregate re-run by hand ten minutes later: the stages are not one run, no fraction
    (tmp_path / "aggregate.json").write_text(json.dumps(
        {"stage": "aggregate", "seconds": 1.0, "process_seconds": 3.5, "finished": _stamp(643.5)}))
    total = stage_timings(tmp_path, ["pretrain@r1", "pretrain@r2", "aggregate"])["stages_total"]
    assert "fixed_fraction" not in total and "wall_seconds" not in total


_STAGE = """
import typer
from infonce_lab.stage import stage
app = typer.Typer(add_completion=False)

@app.command()
@stage{decorator}
def main() -> None:
    pass

app()
"""


@pytest.mark.parametrize(("decorator", "dvc_stage", "written"), [
    ("", "demo@x", True),              # under dvc repro: timed
    ("", None, False),                 # by hand or in a test: nothing written
    ("(timed=False)", "report", False),  # the report reads the folder, so never writes to it
])
def test_stage_decorator_records_wall_time_only_under_dvc(tmp_path, decorator, dvc_stage, written):
    script = tmp_path / "s.py"
    script.write_text(_STAGE.format(decorator=decorator))
    env = {k: v for k, v in os.environ.items() if k != "DVC_STAGE"}
    if dvc_stage:
        env["DVC_STAGE"] = dvc_stage
    env["PYTHONPATH"] = str(REPO / "src")
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=120)
    files = list((tmp_path / "reports" / "timings").glob("*.json"))
    assert bool(files) == written
    if written:
        rec = json.loads(files[0].read_text())
        assert files[0].name == "demo@x.json" and rec["stage"] == "demo@x"
        assert 0 <= rec["seconds"] <= rec["process_seconds"] < 120


def test_provenance_is_clean_when_only_the_pipeline_outputs_changed(tmp_path: Path):
    from infonce_lab.report.render import git_state

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    for f in ("src.py", "dvc.lock", "reports/summary.json"):
        (tmp_path / f).parent.mkdir(exist_ok=True)
        (tmp_path / f).write_text("a\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    (tmp_path / "dvc.lock").write_text("b\n")
    (tmp_path / "reports" / "summary.json").write_text("b\n")
    commit, dirty = git_state(tmp_path)
    assert commit != "unknown" and not dirty
    (tmp_path / "src.py").write_text("b\n")
    assert git_state(tmp_path)[1]
