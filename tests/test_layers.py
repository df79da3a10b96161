"""The import rules of the layout, read from the source (function-level imports included): the
math packages take numbers — they import nothing from the params schema, data, models, training
or the pipeline — and nothing in the package imports the stage scripts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "infonce_lab"
MATH = ("losses", "schedules.py", "tails", "simulation", "evaluation")
FORBIDDEN = ("infonce_lab.params", "infonce_lab.data", "infonce_lab.models", "infonce_lab.train",
             "infonce_lab.pipeline", "infonce_lab.report", "infonce_lab.aggregate")
# The layers below the pipeline: they never reach up into it (imports go stages → pipeline →
# {train, models, data, report} → math).
BELOW_PIPELINE = ("train", "models", "data", "report", *MATH)


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _files(parts: tuple[str, ...]) -> list[Path]:
    out = []
    for part in parts:
        p = SRC / part
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


def _bad(path: Path) -> list[str]:
    return sorted(n for n in imports(path)
                  if any(n == f or n.startswith(f + ".") for f in FORBIDDEN))


@pytest.mark.parametrize("path", _files(MATH), ids=lambda p: str(p.relative_to(SRC)))
def test_math_takes_numbers(path):
    rel = str(path.relative_to(SRC))
    bad = _bad(path)
    assert not bad, f"{rel} imports {bad}: math modules take numbers, not params or files"


def test_the_rule_sees_a_violation(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from infonce_lab.params import Params\n    return Params\n")
    assert _bad(f) == ["infonce_lab.params"]


def test_nothing_imports_the_stages():
    for path in SRC.rglob("*.py"):
        assert not any(n == "stages" or n.startswith("stages.") for n in imports(path)), path


@pytest.mark.parametrize("path", _files(BELOW_PIPELINE), ids=lambda p: str(p.relative_to(SRC)))
def test_nothing_below_the_pipeline_imports_it(path):
    up = sorted(n for n in imports(path) if n == "infonce_lab.pipeline"
                or n.startswith("infonce_lab.pipeline."))
    assert not up, f"{path.relative_to(SRC)} imports {up}: only stages use the pipeline"


@pytest.mark.parametrize("path", _files(("params",)), ids=lambda p: str(p.relative_to(SRC)))
def test_the_params_schema_is_schema_only(path):
    """Validating params.yaml costs no torch import and reaches nothing outside params/ but two
    pure declarations: the schedules (the schema checks τ over every step of a run) and the
    metrics (``primary.metrics`` names compared ones)."""
    names = imports(path)
    assert not any(n == "torch" or n.startswith("torch.") for n in names), path
    assert "infonce_lab" not in names, f"{path.relative_to(SRC)}: import the module by its name"
    own = sorted(n for n in names if n.startswith("infonce_lab.")
                 and not n.startswith("infonce_lab.params") and n not in PARAMS_MAY_READ)
    assert not own, f"{path.relative_to(SRC)} imports {own}"


PARAMS_MAY_READ = ("infonce_lab.schedules", "infonce_lab.evaluation.metrics")


def test_validating_params_loads_no_heavy_library():
    import subprocess
    import sys

    code = ("import sys, infonce_lab.params as p; p.load_params('params.yaml'); "
            "print(sorted(m for m in ('torch', 'sklearn', 'pandas', 'scipy', 'transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=SRC.parents[1], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]", out
