"""The alignment–uniformity section's verdict rules, the report's scoreboard and stage times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infonce_lab.report._legacy import NOT_REPRODUCED, NOT_RUN, REPRODUCED
from infonce_lab.report.au import (
    NONINFERIORITY_MARGIN,
    au_claims,
    noninferiority_verdict,
    plane_verdict,
)
from infonce_lab.report.render import scoreboard, section_verdicts, stage_timings

REPO = Path(__file__).resolve().parents[1]


def _slope(coef: float, half: float) -> dict[str, float]:
    return {"coef": coef, "ci_low": coef - half, "ci_high": coef + half, "spearman": -0.5,
            "spearman_p": 0.01}


def _block(a: tuple[float, float], u: tuple[float, float]) -> dict[str, Any]:
    return {"r2": 0.9, "dof": 17, "alignment": _slope(*a), "uniformity": _slope(*u)}


@pytest.mark.parametrize(("a", "u", "expected"), [
    ((-0.2, 0.1), (-0.1, 0.05), REPRODUCED),          # both intervals below 0
    ((-0.2, 0.3), (-0.1, 0.05), "inconclusive"),      # alignment's interval contains 0
    ((0.2, 0.1), (-0.1, 0.05), NOT_REPRODUCED),       # accuracy *rises* with alignment
])
def test_plane_verdict(a, u, expected):
    j = plane_verdict(_block(a, u), 20, 2)
    assert j["verdict"].startswith(expected)
    assert "n = 20 encoders (2 random init)" in j["ours"]


@pytest.mark.parametrize(("mean", "ci", "expected"), [
    (-0.005, 0.004, REPRODUCED),                       # [−0.9, −0.1] points: within 1 point
    (-0.05, 0.01, NOT_REPRODUCED),                     # clearly more than a point worse
    (0.0, 0.05, "inconclusive"),                       # straddles −1 point
    (0.02, None, "inconclusive"),                      # one seed
])
def test_noninferiority_verdict(mean, ci, expected):
    assert NONINFERIORITY_MARGIN == 0.01
    assert noninferiority_verdict({"mean": mean, "ci95": ci, "n": 2})["verdict"].startswith(
        expected)


def _pair(mean: float) -> dict[str, Any]:
    return {"diff": {"mean": mean, "ci95": 0.002, "n": 3}}


def test_au_claims_orient_directau_minus_infonce_and_say_what_is_missing():
    kinds = {"infonce": "info_nce", "directau": "direct_au", "weince": "weince"}
    paired = {
        # DirectAU listed second: the stored a − b is InfoNCE − DirectAU = +0.03 → DirectAU −0.03
        "d-b/infonce_vs_directau@fixed/linear.test_acc": _pair(0.03),
        # listed first: stored as is
        "d-b/directau_vs_weince@fixed/knn.test_acc": _pair(-0.5),   # not an InfoNCE pair
        "d-b/directau_vs_infonce@cos/knn.test_acc": _pair(0.004),
        "d-b/infonce_vs_directau@fixed/knn.test_recall_at_1": _pair(0.5),  # not a claimed metric
    }
    rows = au_claims({}, paired, kinds)
    plane, direct = [r for r in rows if r["kind"] == "claim"]
    assert plane["verdict"].startswith(NOT_RUN)
    cases = [r for r in rows if r["kind"] == "case"]
    assert [c["case"] for c in cases] == ["d-b @ fixed, linear probe", "d-b @ cos, kNN"]
    assert cases[0]["verdict"] == NOT_REPRODUCED and cases[0]["ours"].startswith("-3.00 points")
    assert cases[1]["verdict"] == REPRODUCED
    assert direct["verdict"].startswith("inconclusive")  # the cases disagree
    rows = au_claims(None, {}, kinds)
    assert [r["verdict"].split(" (")[0] for r in rows] == [NOT_RUN, NOT_RUN]


def test_scoreboard_counts_claim_level_verdicts_per_section():
    context = {
        "accuracy_claims": [{"verdict": REPRODUCED}, {"verdict": "not run: apply a profile"}],
        "text": {"claims": [{"verdict": "inconclusive (CI overlaps 0)"}]},
        "tails": {"overall": [{"verdict": NOT_REPRODUCED}]},
        "sims": {"by_paper": {
            "annealing": [{"kind": "claim", "verdict": REPRODUCED},
                          {"kind": "case", "verdict": NOT_REPRODUCED}],   # a case: not counted
            "geometry": [], "au": [{"kind": "claim", "verdict": REPRODUCED}]}},
        "au_rows": [{"kind": "claim", "verdict": "not run (no data)"}],
        "verdicts": [{"verdict": REPRODUCED}] * 3,
    }
    board = {s["id"]: s for s in scoreboard(section_verdicts(context))}
    assert [board["weince"][k] for k in ("n", "reproduced", "not_reproduced", "inconclusive",
                                         "not_run")] == [4, 1, 1, 1, 1]
    assert board["annealing"]["n"] == 1 and board["annealing"]["reproduced"] == 1
    assert board["geometry"]["n"] == 0
    assert board["au"]["n"] == 2 and board["au"]["not_run"] == 1
    assert board["pipeline"]["reproduced"] == 3


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


_STAGE = """
import typer
from infonce_lab.cli import stage
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
