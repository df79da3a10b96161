"""One stage's several outputs are replaced together (io.replaced_together): a SIGKILL at any
point of the commit — staged but not journaled, journaled, half renamed, inside a folder swap,
inside the recovery itself — leaves either every old output or, once the next run has finished
the journal, every new one. The kills are real (a child process SIGKILLs itself at the named
point, io.kill_point)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from infonce_lab import io

# A stage's three outputs: a folder, a JSON file, a text file.
CHILD = """
import os, sys
from pathlib import Path
from infonce_lab.io import replaced_together
os.chdir(sys.argv[1])
with replaced_together("stage") as out:
    d = out.dir(Path("reports/tables"))
    (d / "a.csv").write_text("new")
    (d / "b.csv").write_text("new")
    out.json(Path("reports/summary.json"), {"v": "new"})
    out.text(Path("reports/page/index.html"), "new")
    if os.environ.get("DIE_STAGING"):
        os.kill(os.getpid(), 9)
"""


def _old(root: Path) -> None:
    (root / "reports/tables").mkdir(parents=True)
    (root / "reports/page").mkdir()
    for name in ("a.csv", "b.csv"):
        (root / "reports/tables" / name).write_text("old")
    (root / "reports/summary.json").write_text(json.dumps({"v": "old"}))
    (root / "reports/page/index.html").write_text("old")


def _state(root: Path) -> set[str]:
    """The version of each output visible now ('missing' if it is not there)."""
    got = set()
    tables = root / "reports/tables"
    got |= {p.read_text() for p in tables.iterdir()} if tables.is_dir() else {"missing"}
    s = root / "reports/summary.json"
    got.add(json.loads(s.read_text())["v"] if s.is_file() else "missing")
    h = root / "reports/page/index.html"
    got.add(h.read_text() if h.is_file() else "missing")
    return got


def _leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*")
                  if p.name != ".journal" or any(p.iterdir()))


def _child(root: Path, **env: str) -> int:
    return subprocess.run([sys.executable, "-c", CHILD, str(root)], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120).returncode


@pytest.mark.parametrize("point, visible_after_kill", [
    ("journal", {"old"}),          # journaled, nothing renamed yet
    ("commit", {"old", "new"}),    # the folder renamed, the two files not
    ("swap", {"missing", "old"}),  # inside the folder's swap: the folder briefly absent
])
def test_a_kill_inside_the_commit_is_finished_by_the_next_run(tmp_path, point,
                                                             visible_after_kill):
    _old(tmp_path)
    assert _child(tmp_path, INFONCE_LAB_KILL_AT=point) == -signal.SIGKILL
    assert _state(tmp_path) == visible_after_kill
    assert (tmp_path / ".journal/stage.json").is_file()
    assert io.finish_interrupted_commits(tmp_path / ".journal") == ["stage"]
    assert _state(tmp_path) == {"new"}
    assert _leftovers(tmp_path) == []


def test_a_kill_before_the_journal_keeps_every_old_output(tmp_path):
    _old(tmp_path)
    assert _child(tmp_path, DIE_STAGING="1") == -signal.SIGKILL
    assert _state(tmp_path) == {"old"}
    assert not (tmp_path / ".journal/stage.json").exists()
    assert _leftovers(tmp_path)  # the dead run's temporaries …
    assert _child(tmp_path) == 0  # … are removed by the next write of those outputs
    assert _state(tmp_path) == {"new"} and _leftovers(tmp_path) == []


def test_a_kill_during_the_recovery_is_recovered_again(tmp_path):
    _old(tmp_path)
    assert _child(tmp_path, INFONCE_LAB_KILL_AT="journal") == -signal.SIGKILL
    recover = ("import os, sys; os.chdir(sys.argv[1]); "
               "from infonce_lab.io import finish_interrupted_commits as f; f()")
    proc = subprocess.run([sys.executable, "-c", recover, str(tmp_path)],
                          env={**os.environ, "INFONCE_LAB_KILL_AT": "swap"}, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert _state(tmp_path) == {"missing", "old"}
    io.finish_interrupted_commits(tmp_path / ".journal")
    assert _state(tmp_path) == {"new"} and _leftovers(tmp_path) == []


def test_the_next_write_of_an_output_finishes_the_commit_first(tmp_path, monkeypatch):
    """A writer that would remove the journal's temporaries as a dead run's finishes it first."""
    _old(tmp_path)
    assert _child(tmp_path, INFONCE_LAB_KILL_AT="journal") == -signal.SIGKILL
    monkeypatch.chdir(tmp_path)
    io.write_json_atomic(Path("reports/summary.json"), {"v": "newer"})
    assert json.loads((tmp_path / "reports/summary.json").read_text()) == {"v": "newer"}
    assert {p.read_text() for p in (tmp_path / "reports/tables").iterdir()} == {"new"}
    assert _leftovers(tmp_path) == []


def test_an_exception_in_the_block_changes_nothing(tmp_path, monkeypatch):
    _old(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError), io.replaced_together("stage") as out:
        (out.dir(Path("reports/tables")) / "a.csv").write_text("new")
        out.json(Path("reports/summary.json"), {"v": "new"})
        raise RuntimeError("the stage failed")
    assert _state(tmp_path) == {"old"} and _leftovers(tmp_path) == []


GARBAGE_JOURNALS = {
    "not JSON": "{not json",
    "no entries": '{"format": 1, "entries": []}',
    "another format": '{"format": 7, "entries": [{"target": "a", "staged": ".a.x.tmp", "file": true}]}',
    "a target outside": '{"format": 1, "entries": [{"target": "../../etc/x", "staged": '
                        '"../../etc/.x.1.tmp", "file": true}]}',
    "an absolute target": '{"format": 1, "entries": [{"target": "/etc/x", "staged": "/etc/.x.1.tmp",'
                          ' "file": true}]}',
    "a staged copy elsewhere": '{"format": 1, "entries": [{"target": "out/a.json", "staged": '
                               '"other/.a.json.1.tmp", "file": true}]}',
    "a staged name not ours": '{"format": 1, "entries": [{"target": "out/a.json", "staged": '
                              '"out/b", "file": true}]}',
    "file not a boolean": '{"format": 1, "entries": [{"target": "a", "staged": ".a.1.tmp", '
                          '"file": "yes"}]}',
    "a list": "[1, 2]",
}


@pytest.mark.parametrize("case", sorted(GARBAGE_JOURNALS))
def test_a_garbage_journal_is_refused_naming_it_and_nothing_moves(tmp_path, case):
    (tmp_path / ".journal").mkdir()
    (tmp_path / ".journal/stage.json").write_text(GARBAGE_JOURNALS[case])
    (tmp_path / "a").write_text("kept")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(io.CorruptFileError, match=r"stage\.json: an interrupted commit"):
        io.finish_interrupted_commits(tmp_path / ".journal")
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "a").read_text() == "kept"


def test_outputs_keep_the_umask(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = os.umask(0o027)
    try:
        with io.replaced_together("stage") as out:
            (out.dir(Path("t")) / "x").write_text("1")
            out.text(Path("f.txt"), "1")
    finally:
        os.umask(old)
    assert (tmp_path / "t").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o640


def test_every_stage_start_sweeps_what_killed_writers_left(tmp_path, monkeypatch):
    """A file killed before its rename leaves ``.<name>.<random>.tmp``; DVC may never re-run
    that stage (its output is unchanged), so the next stage to start removes it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports/metrics").mkdir(parents=True)
    (tmp_path / "reports/metrics/.m.json.k2j4ab12.tmp").write_text("half")
    (tmp_path / "data/.raw.x81abcde.tmp").mkdir(parents=True)
    (tmp_path / "models/.vision.old").mkdir(parents=True)   # a legacy swap's old copy, alone
    (tmp_path / "models/.vision.old/model.pt").write_text("weights")
    (tmp_path / "data/raw").mkdir()
    (tmp_path / "data/raw/.gitignore").write_text("/digits\n")  # DVC's own: kept
    swept = io.sweep_stale_temporaries()
    assert len(swept) == 3
    assert (tmp_path / "models/vision/model.pt").read_text() == "weights"   # put back
    assert (tmp_path / "data/raw/.gitignore").is_file()
    assert _leftovers(tmp_path) == ["data/raw/.gitignore"]


def test_a_stage_running_beside_another_leaves_the_leftovers_alone(tmp_path, monkeypatch):
    """DVC runs unrelated stages at once (it releases its lock while a command runs): a stage
    that is not alone (another holds the workspace lock) must not sweep or finish anything — the
    other stage's staged copies are live. Alone again, it does. (The lock is on the folder
    itself: nothing is created for it.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    live = tmp_path / "reports/.m.json.ab12cd34.tmp"
    live.write_text("another stage's staged output")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time; os.chdir(sys.argv[1]); from infonce_lab import io; "
        "io.hold_stage_lock(); io.share_stage_lock(); print('held', flush=True); time.sleep(60)"),
        str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        from infonce_lab.stage import recover_alone

        recover_alone()
        assert live.is_file()
    finally:
        holder.kill()
        holder.wait()
    recover_alone()
    assert not live.exists()


def test_a_commit_whose_staged_copy_vanished_replaces_nothing(tmp_path, monkeypatch):
    _old(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match="disappeared before the commit"), \
            io.replaced_together("stage") as out:
        d = out.dir(Path("reports/tables"))
        (d / "a.csv").write_text("new")
        out.json(Path("reports/summary.json"), {"v": "new"})
        import shutil
        shutil.rmtree(d)   # what a sweep by a stage that wrongly thought itself alone would do
    assert _state(tmp_path) == {"old"} and _leftovers(tmp_path) == []


def test_a_sibling_s_temporary_is_not_taken_for_its_own(tmp_path):
    """``.x.json.<random>.tmp`` belongs to x.json, not to x: writing x keeps it."""
    sibling = tmp_path / ".x.json.ab12cd34.tmp"
    sibling.write_text("x.json's")
    io.write_text_atomic(tmp_path / "x", "x")
    assert sibling.is_file()
