"""dvc.yaml's deps against each stage's import closure, and the report's stage list against
DVC's: a module a stage imports but does not list would leave its cached results stale."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from infonce_lab.devtools.deps import import_closure, missing_deps


def test_every_stage_lists_every_module_it_imports(repo_root):
    assert missing_deps(repo_root) == {}


def _copy(repo_root: Path, tmp_path: Path) -> Path:
    for rel in ("stages", "src/infonce_lab"):
        shutil.copytree(repo_root / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(repo_root / "dvc.yaml", tmp_path / "dvc.yaml")
    return tmp_path


def test_a_dropped_dep_is_reported(repo_root, tmp_path):
    root = _copy(repo_root, tmp_path)
    spec = yaml.safe_load((root / "dvc.yaml").read_text())
    deps = spec["stages"]["simulate"]["do"]["deps"]
    deps.remove("src/infonce_lab/losses")  # population.py and large_batch.py import the losses
    (root / "dvc.yaml").write_text(yaml.safe_dump(spec))
    missing = missing_deps(root)
    assert set(missing) == {"simulate"}
    assert "src/infonce_lab/losses/infonce.py" in missing["simulate"]


def test_a_new_function_level_import_is_reported(repo_root, tmp_path):
    root = _copy(repo_root, tmp_path)
    script = root / "stages/noise_floor.py"
    script.write_text(script.read_text().replace(
        "def main(", "def _unused() -> None:\n    from infonce_lab.report import verdicts  # noqa: F401\n\n\ndef main(", 1))
    missing = missing_deps(root)
    assert "src/infonce_lab/report/verdicts.py" in missing["noise_floor"]
    assert "src/infonce_lab/report/__init__.py" in missing["noise_floor"]


def test_closure_follows_imports_through_modules(repo_root):
    files = {str(f.relative_to(repo_root / "src")) for f in
             import_closure(repo_root / "stages/simulate.py", repo_root / "src")}
    # stages/simulate.py → simulation.experiments → simulation.population → losses
    assert "infonce_lab/simulation/population.py" in files
    assert "infonce_lab/losses/infonce.py" in files
    assert not any(f.startswith("infonce_lab/report/") for f in files)


def test_report_stage_list_is_dvcs(repo_root, raw):
    from dvc.repo import Repo

    from infonce_lab.config import parse_params
    from infonce_lab.report.render import stage_names

    params = parse_params(raw)
    with Repo(str(repo_root)) as repo:
        dvc_names = [s.addressing for s in repo.index.stages]
    assert sorted(stage_names(params)) == sorted(n for n in dvc_names if n != "report")
