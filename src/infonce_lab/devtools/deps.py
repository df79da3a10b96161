"""The import closure of each stage script, held against dvc.yaml's ``deps:``.

A stage's result depends on every module of this package it imports, directly or through other
modules (function-level imports included). DVC re-runs a stage only when a listed dep changes, so
a module missing from the list leaves cached results stale when it is edited. ``missing_deps``
reads the imports statically (``ast``: nothing is imported or run) and reports, per stage, the
package files its command's script reaches that no dep covers (a dep covers a file when it is the
file or a folder above it). ``python -m infonce_lab.devtools.deps`` prints them and exits 1.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

PACKAGE = "infonce_lab"


def _module_file(src: Path, dotted: str) -> Path | None:
    base = src.joinpath(*dotted.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _imported(tree: ast.AST) -> set[str]:
    """Dotted names of this package's modules that a file imports (``from a import b`` yields
    ``a`` and ``a.b``: b may be a submodule; names that are not modules are dropped later)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}


def import_closure(script: Path, src: Path) -> set[Path]:
    """Every file of the package under ``src`` that ``script`` reaches through imports; a module's
    parent packages count too (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``)."""
    seen: set[Path] = set()
    todo = [script]
    while todo:
        path = todo.pop()
        for dotted in _imported(ast.parse(path.read_text(), str(path))):
            parts = dotted.split(".")
            for k in range(1, len(parts) + 1):
                f = _module_file(src, ".".join(parts[:k]))
                if f is not None and f not in seen:
                    seen.add(f)
                    todo.append(f)
    return seen


def _covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


def missing_deps(root: Path) -> dict[str, list[str]]:
    """{stage: [package files it imports that its deps do not cover]} for every dvc.yaml stage
    whose command runs a script under stages/."""
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    out: dict[str, list[str]] = {}
    for name, spec in stages.items():
        body = spec.get("do", spec)
        m = re.search(r"stages/\w+\.py", body["cmd"])
        if not m:
            continue
        deps = [d if isinstance(d, str) else next(iter(d)) for d in body.get("deps", [])]
        files = import_closure(root / m.group(0), root / "src")
        rel = sorted(str(f.relative_to(root)) for f in files)
        lacking = [f for f in rel if not _covered(f, deps)]
        if not _covered(m.group(0), deps):
            lacking.insert(0, m.group(0))
        if lacking:
            out[name] = lacking
    return out


def main() -> int:
    missing = missing_deps(Path.cwd())
    for stage, files in missing.items():
        print(f"dvc.yaml: stage '{stage}' imports files its deps do not list: {', '.join(files)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
