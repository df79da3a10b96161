"""The built wheel carries everything the installed package reads: the editable install used by
`make setup` reads the source tree, so a file missing from `package-data` only shows in a wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

CHECK = """
import infonce_lab, sys
from infonce_lab.report.render import environment
assert infonce_lab.__file__.startswith(sys.argv[1]), infonce_lab.__file__
env = environment()
for name in env.list_templates():
    env.get_template(name)  # compiles it: a missing include or filter fails here
print("\\n".join(sorted(env.list_templates())))
"""


def test_the_wheel_holds_every_template_the_report_renders(repo_root: Path, tmp_path: Path):
    tree = tmp_path / "tree"  # a copy: setuptools writes build/ and egg-info into the tree
    shutil.copytree(repo_root / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(repo_root / name, tree / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(tmp_path), str(tree)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    wheel, = tmp_path.glob("infonce_lab-*.whl")
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(unpacked)
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    out = subprocess.run([sys.executable, "-c", CHECK, str(unpacked)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    source = repo_root / "src/infonce_lab/report/templates"
    wanted = sorted(p.relative_to(source).as_posix() for p in source.rglob("*.j2"))
    assert out.stdout.split() == wanted
    assert any("/" in name for name in wanted)  # the partials in templates/html and /md
