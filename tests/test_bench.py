"""`make bench` in a fresh clone (no DVC outputs, every stage to run): it writes
reports/bench.json with every section, at the quick sizes. The committed reference run is what
docs/benchmarks.md shows and what any ratio the docs quote must be read from."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
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
    training = bench["training"]  # the median of its processes lies within their range
    assert training["processes"] == 2
    for lo in ("infonce", "weince"):
        assert training[f"{lo}_step_over_bare_lowest"] <= training[
            f"{lo}_step_over_bare_fwd_bwd"] <= training[f"{lo}_step_over_bare_highest"]
    assert not list(clone.rglob(".*.tmp"))  # written through a temporary, renamed


ROOT = Path(__file__).resolve().parents[1]
RATIO = re.compile(r"(\d+(?:\.\d+)?)(?:[–-](\d+(?:\.\d+)?))?×(?!\d)")


def _bench_module():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench", ROOT / "benchmarks/bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _values(tree: object) -> list[float]:
    if isinstance(tree, dict):
        return [v for x in tree.values() for v in _values(x)]
    if isinstance(tree, list):
        return [v for x in tree for v in _values(x)]
    return [float(tree)] if isinstance(tree, int | float) and not isinstance(tree, bool) else []


def unbacked_ratios(text: str, bench: dict) -> list[str]:
    """The "N×" and "N–M×" figures of ``text`` that no value of ``bench`` rounds to."""
    values = _values(bench)

    def backed(figure: str) -> bool:
        places = len(figure.partition(".")[2])
        return any(round(v, places) == float(figure) for v in values)

    return [m.group(0) for m in RATIO.finditer(text)
            if not all(backed(g) for g in m.groups() if g is not None)]


def _docstrings(path: Path) -> str:
    import ast

    tree = ast.parse(path.read_text())
    return "\n".join(d for node in ast.walk(tree)
                     if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                     and (d := ast.get_docstring(node)))


def test_the_benchmarks_page_is_the_reference_run() -> None:
    bench = json.loads((ROOT / "reports/bench.json").read_text())
    assert bench["machine"]["quick"] is False  # a full run, not the test's quick one
    assert _bench_module().doc_page(bench) == (ROOT / "docs/benchmarks.md").read_text(), \
        "docs/benchmarks.md lags reports/bench.json: python benchmarks/bench.py --doc"


def test_every_ratio_the_docs_quote_is_in_the_reference_run() -> None:
    bench = json.loads((ROOT / "reports/bench.json").read_text())
    # the GPU figures (docs/paper-scale.md) come from the prepared GPU checks' one run
    reference = {"cpu": bench, **{name: json.loads((ROOT / f"reports/{name}.json").read_text())
                                  for name in ("gpu_check", "gpu_profile")}}
    pages = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md"))
                                   if p.name != "benchmarks.md")]
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in pages}
    texts |= {str(p.relative_to(ROOT)): _docstrings(p)
              for p in sorted((ROOT / "src").rglob("*.py"))}
    stale = {name: found for name, text in texts.items()
             if (found := unbacked_ratios(text, reference))}
    assert not stale, (f"figures not in reports/bench.json or reports/gpu_*.json (quote it, or "
                       f"drop the number): {stale}")
    # the scan sees a figure the reference run does not hold, and one it does
    assert unbacked_ratios("about 123.4× faster; 8×8 digits", bench) == ["123.4×"]
    ratio = bench["knn"]["knn_sklearn_over_ours"]
    assert unbacked_ratios(f"{ratio:.1f}× faster", bench) == []


def test_the_gpu_scale_script_runs_its_every_part_on_the_cpu(tmp_path: Path) -> None:
    """benchmarks/gpu_scale.py is run by hand on a lent GPU; here its every part runs on the CPU
    at toy sizes (torchrun with one and two gloo processes), so it cannot rot unseen."""
    dest = tmp_path / "bench_gpu.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu_scale.py"), "--cpu",
                           "--quick", "--out", str(dest)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(dest.read_text())
    assert out["quick"] is True and out["precision"] == "fp32"
    (step,) = out["steps"]
    for loss, ms in step["step_ms"].items():  # throughput is the step's own arithmetic
        assert math.isclose(step["views_per_s"][loss], 2e3 * step["batch"] / ms)
        assert step["step_over_forward_backward"][loss] > 0
    parts = step["parts_ms"]
    assert set(parts) >= {"data", "augmentation", "forward", "backward", "forward_backward",
                          "loss_infonce", "loss_weince", "optimizer"}
    assert all(math.isfinite(v) for v in _values(out))
    assert step["footprint_estimate_bytes"] > 0
    assert [r["processes"] for r in out["torchrun"]] == [1, 2]
    assert set(out["compile"]) >= {"eager_step_ms", "compiled_step_ms", "compiled_over_eager"}
    assert not list(tmp_path.glob(".*.tmp"))
