"""`make bench` in a fresh clone (no DVC outputs, every stage to run): it writes
reports/bench.json with every section, at the quick sizes."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.pipeline


def _numbers(section: object) -> list[float]:
    rows = section if isinstance(section, list) else [section]
    return [v for row in rows for v in row.values() if isinstance(v, float)]


def test_make_bench_writes_its_json_in_a_fresh_clone(tmp_path, copy_worktree):
    clone = copy_worktree(tmp_path / "clone")
    # not the outer `make test`'s flags and jobserver: this make is a user's, in the clone
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "clone"]):
        subprocess.run(["git", *cmd], cwd=clone, env=env, check=True, capture_output=True)
    venv = Path(sys.executable).parents[1]
    # `-o <stamp>`: the venv counts as installed (the clone's files are newer than its stamp,
    # and `make setup` would install the clone into this very venv).
    proc = subprocess.run(["make", "-o", f"{venv}/.installed", "bench", f"VENV={venv}",
                           "BENCH_FLAGS=--quick"], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    bench = json.loads((clone / "reports/bench.json").read_text())
    spec = importlib.util.spec_from_file_location("bench", clone / "benchmarks/bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sections = set(bench) - {"machine"}
    assert bench["machine"]["quick"] is True and sections == set(module.SECTIONS), sections
    pipeline = bench["pipeline"]
    # every stage is to run, and that was measured, not refused
    assert pipeline["stages_not_up_to_date"] > 0
    assert pipeline["dvc_status_s"] > 0
    # the dry run is measured unless the workspace stops it (code changed since dvc.lock, its
    # inputs not downloaded), which is then said in DVC's words
    assert (pipeline["dvc_repro_dry_s"] or 0) > 0 or \
        "No such file" in pipeline.get("dvc_repro_dry_skipped", ""), pipeline
    for name in sections:
        assert all(math.isfinite(v) for v in _numbers(bench[name])), (name, bench[name])
    assert not list(clone.rglob(".*.tmp"))  # written through a temporary, renamed
