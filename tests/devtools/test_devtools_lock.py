"""dvc.lock pruning keeps exactly the stages dvc.yaml defines, in DVC's own format."""

from __future__ import annotations

from pathlib import Path

from infonce_lab.devtools.lock import prune


def test_prune_removes_only_stale_entries(tmp_path: Path):
    lock = tmp_path / "dvc.lock"
    lock.write_text("schema: '2.0'\nstages:\n  a@1:\n    cmd: x\n  gone@2:\n    cmd: y\n"
                    "  b:\n    cmd: z\n")
    assert prune(lock, ["a@1", "b"]) == ["gone@2"]
    text = lock.read_text()
    assert "gone@2" not in text and "a@1:" in text and "b:" in text and "schema: '2.0'" in text
    before = lock.stat().st_mtime_ns
    assert prune(lock, ["a@1", "b"]) == []
    assert lock.stat().st_mtime_ns == before  # nothing to remove: not rewritten
    assert prune(tmp_path / "missing.lock", ["a"]) == []
