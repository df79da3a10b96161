"""What the lock says is what ran: a stage whose params file changes while it runs fails
instead of letting DVC record the new values as the ones it ran with (``stage.params_unchanged_or_exit``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infonce_lab.stage import changed_keys, params_or_exit, stage

ROOT = Path(__file__).resolve().parents[1]


def _lr(path: Path, lr: float, comment: str = "") -> None:
    raw = yaml.safe_load(path.read_text())
    raw["training"]["lr"] = lr
    path.write_text(comment + yaml.safe_dump(raw))


def _run(path: Path, edit) -> None:  # noqa: ANN001
    @stage(timed=False, announce=False, recover=False)
    def body() -> None:
        params_or_exit(str(path))
        edit()
    body()


def test_a_value_edited_during_the_stage_fails_it_naming_the_key(tmp_path, capsys) -> None:
    p = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", p)
    with pytest.raises(SystemExit) as exc:
        _run(p, lambda: _lr(p, 0.004321))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "changed while this stage ran (training.lr)" in err and "dvc repro again" in err


def test_an_edit_that_changes_no_value_lets_it_finish(tmp_path) -> None:
    p = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", p)
    lr = yaml.safe_load(p.read_text())["training"]["lr"]
    _run(p, lambda: _lr(p, lr, comment="# reformatted, same values\n"))


def test_changed_keys_are_the_dotted_paths_that_differ() -> None:
    old = {"a": {"b": 1, "c": [1, 2]}, "d": True}
    new = {"a": {"b": 1.0, "c": [1, 3]}, "e": 1}
    assert changed_keys(old, new) == ["a.b", "a.c", "d", "e"]   # 1 → 1.0 is a change of type
    assert changed_keys(old, old) == []


STAGE = """
import sys
from pathlib import Path
import yaml
from infonce_lab.stage import params_or_exit, stage

@stage(timed=False, announce=False, recover=False)
def main():
    params_or_exit()
    Path("out.txt").write_text("ran with lr " + str(yaml.safe_load(open("params.yaml"))["training"]["lr"]))
    if Path("edit_me").exists():      # the researcher's edit, made while the stage runs
        Path("edit_me").unlink()
        raw = yaml.safe_load(open("params.yaml"))
        raw["training"]["lr"] = 0.004321
        Path("params.yaml").write_text(yaml.safe_dump(raw))
    if Path("edit_other").exists():   # a key this stage does not list: DVC records nothing of it
        Path("edit_other").unlink()
        raw = yaml.safe_load(open("params.yaml"))
        raw["report"]["title"] = "edited while train ran"
        Path("params.yaml").write_text(yaml.safe_dump(raw))

main()
"""


def test_dvc_records_nothing_for_the_stage_and_the_next_run_redoes_it(tmp_path) -> None:
    dvc = str(Path(sys.executable).parent / "dvc")   # installed beside the interpreter
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "stage.py").write_text(STAGE)
    (tmp_path / "dvc.yaml").write_text(
        f"stages:\n  train:\n    cmd: {sys.executable} stage.py\n    deps: [stage.py]\n"
        "    params: [training.lr]\n    outs: [out.txt]\n")
    (tmp_path / "edit_me").write_text("")

    def dvc_(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([dvc, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)

    assert dvc_("init", "--no-scm", "-q").returncode == 0
    first = dvc_("repro")
    assert first.returncode != 0 and "changed while this stage ran (training.lr)" in first.stderr
    assert not (tmp_path / "dvc.lock").exists() or "train" not in (tmp_path / "dvc.lock").read_text()
    (tmp_path / "edit_other").write_text("")
    second = dvc_("repro")
    assert second.returncode == 0, second.stderr            # the unlisted edit is not refused
    assert (tmp_path / "out.txt").read_text() == "ran with lr 0.004321"
    assert "lr: 0.004321" in (tmp_path / "dvc.lock").read_text()
    assert "edited while train ran" in (tmp_path / "params.yaml").read_text()


@pytest.mark.parametrize("depends", ["    deps: [stage.py, params.yaml]\n",
                                     "    deps: [stage.py]\n    params:\n      - params.yaml:\n"],
                         ids=["file_dep", "whole_file_params"])
def test_a_stage_on_the_whole_file_fails_on_any_edit(tmp_path, depends) -> None:
    """check_params depends on params.yaml as a file: DVC records its hash, so an edit to any
    key while it runs must fail it (the filter to listed keys would let it pass)."""
    dvc = str(Path(sys.executable).parent / "dvc")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "stage.py").write_text(STAGE)
    (tmp_path / "dvc.yaml").write_text(
        f"stages:\n  check:\n    cmd: {sys.executable} stage.py\n{depends}    outs: [out.txt]\n")
    (tmp_path / "edit_other").write_text("")
    for args in (["init", "--no-scm", "-q"], ["repro"]):
        done = subprocess.run([dvc, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode != 0 and "changed while this stage ran (report.title)" in done.stderr


def test_a_later_stage_call_does_not_compare_an_earlier_call_s_file(tmp_path) -> None:
    """Each decorated call checks the file it read itself: a call that reads none after one
    whose file changed finishes (tests, and anything running stages in one process)."""
    p = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", p)
    with pytest.raises(SystemExit):
        _run(p, lambda: _lr(p, 0.004321))

    @stage(timed=False, announce=False, recover=False)
    def reads_nothing() -> str:
        return "done"
    assert reads_nothing() == "done"
