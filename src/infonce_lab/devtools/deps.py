"""dvc.yaml's code deps, generated from each stage script's import closure.

A stage's result depends on every module of this package it imports, directly or through other
modules (function-level imports included). DVC re-runs a stage only when a listed dep changes, so
a module missing from the list leaves cached results stale when it is edited, and a module listed
but not imported re-runs the stage for nothing. The imports are read statically (``ast``: nothing
is imported or run). A folder every module of which the stage reaches is listed as the folder (one
lock entry, package data included); the rest file by file.

Imports made by name at run time (``importlib.import_module``) are not seen, with one exception:
a package whose ``__init__.py`` discovers its own modules (``pkgutil.iter_modules(__path__)``, as
the report's sections and the simulation package do) reaches every module of its folder. Any other module a stage runs must
be imported explicitly.

``python -m infonce_lab.devtools.deps`` reports any drift and exits 1 (``make repro`` runs it
first, a test runs it); ``--write`` regenerates the lists in place. Non-code deps (data, models,
reports) are kept as written, after the code.
"""

from __future__ import annotations

import ast
import json
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


def _discovers_its_modules(tree: ast.AST) -> bool:
    """Whether a package's ``__init__`` lists its own modules: ``pkgutil.iter_modules(__path__)``."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "iter_modules" and n.args
               and isinstance(n.args[0], ast.Name) and n.args[0].id == "__path__"
               for n in ast.walk(tree))


def import_closure(script: Path, src: Path) -> set[Path]:
    """Every file of the package under ``src`` that ``script`` reaches through imports; a module's
    parent packages count too (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``)."""
    seen: set[Path] = set()
    todo = [script]
    while todo:
        path = todo.pop()
        tree = ast.parse(path.read_text(), str(path))
        if path.name == "__init__.py" and _discovers_its_modules(tree):
            for f in sorted(path.parent.glob("*.py")):
                if f not in seen:
                    seen.add(f)
                    todo.append(f)
        for dotted in _imported(tree):
            parts = dotted.split(".")
            for k in range(1, len(parts) + 1):
                f = _module_file(src, ".".join(parts[:k]))
                if f is not None and f not in seen:
                    seen.add(f)
                    todo.append(f)
    return seen


def _is_code(dep: str) -> bool:
    return dep.startswith(("src/", "stages/"))


def code_deps(script: Path, root: Path) -> list[str]:
    """The code deps of a stage: its script, then the package files it reaches, each folder
    whose every module it reaches written as the folder, the rest file by file; a data folder
    (not a package: templates) of a package the stage reaches counts as reached."""
    src = root / "src"
    reached = {f.relative_to(root) for f in import_closure(script, src)}
    package = src / PACKAGE

    def whole(folder: Path) -> bool:
        # A package's __main__.py (``python -m``) is run, never imported: it does not keep the
        # folder from being one entry (the folder then covers it too, a harmless superset).
        mods = [f.relative_to(root) for f in folder.rglob("*.py")
                if "__pycache__" not in f.parts and f.name != "__main__.py"]
        return bool(mods) and all(m in reached for m in mods)

    out: list[str] = []

    def visit(folder: Path) -> None:
        used = any(m.parent == folder.relative_to(root) for m in reached)
        for child in sorted(folder.iterdir()):
            if child.is_dir() and (child / "__init__.py").is_file():
                if whole(child):
                    out.append(str(child.relative_to(root)))
                else:
                    visit(child)
            elif child.is_dir() and child.name != "__pycache__" and used:
                out.append(str(child.relative_to(root)))  # package data (templates) of a module
            elif child.suffix == ".py" and child.relative_to(root) in reached:
                out.append(str(child.relative_to(root)))

    visit(package)
    return [str(script.relative_to(root)), *out]


def _stage_script(cmd: str) -> str | None:
    m = re.search(r"stages/\w+\.py", cmd)
    return m.group(0) if m else None


def expected_deps(root: Path) -> dict[str, list[str]]:
    """{stage: deps} with the code deps generated and every other dep (data, models, reports)
    kept as dvc.yaml lists it, after the code."""
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    out = {}
    for name, spec in stages.items():
        body = spec.get("do", spec)
        script = _stage_script(body["cmd"])
        if script is None:
            continue
        listed = [d if isinstance(d, str) else next(iter(d)) for d in body.get("deps", [])]
        out[name] = [*code_deps(root / script, root), *(d for d in listed if not _is_code(d))]
    return out


def drift(root: Path) -> dict[str, tuple[list[str], list[str]]]:
    """{stage: (code deps missing from dvc.yaml, code deps dvc.yaml lists in excess)} — empty
    when dvc.yaml's deps are exactly what the imports give."""
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    out = {}
    for name, want in expected_deps(root).items():
        body = stages[name].get("do", stages[name])
        have = [d if isinstance(d, str) else next(iter(d)) for d in body.get("deps", [])]
        missing = [d for d in want if _is_code(d) and d not in have]
        extra = [d for d in have if _is_code(d) and d not in want]
        if missing or extra:
            out[name] = (missing, extra)
    return out


WIDTH = 100


def _flow(key_indent: str, deps: list[str]) -> list[str]:
    """``deps: [a, b, …]`` wrapped at :data:`WIDTH`: a generated list read as one paragraph
    (a line per file made dvc.yaml three screens of file names around a one-screen graph).
    Items with YAML's flow indicators (``${item}``'s braces) are quoted."""
    items = [json.dumps(d) if re.search(r"[{}\[\],#]|: ", d) else d for d in deps]
    if not items:
        return [f"{key_indent}deps: []\n"]
    lines, line = [], f"{key_indent}deps: ["
    for n, item in enumerate(items):
        piece = item + ("]" if n == len(items) - 1 else ",")
        if len(line) + 1 + len(piece) > WIDTH and not line.endswith("["):
            lines.append(line + "\n")
            line = f"{key_indent}  {piece}"
        else:
            line += ("" if line.endswith("[") else " ") + piece
    return [*lines, line + "\n"]


def write(root: Path) -> list[str]:
    """Rewrite each stage's ``deps:`` list in dvc.yaml (text edit: comments and layout stay;
    the list itself in flow style, :func:`_flow`); returns the stages whose list changed."""
    want = expected_deps(root)
    text = (root / "dvc.yaml").read_text()
    stages = yaml.safe_load(text)["stages"]
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    changed: list[str] = []
    stage = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^  (\w+):", line)
        if m:
            stage = m.group(1)
        key = re.match(r"^(\s+)deps:\s*(\[?)", line)
        if key and stage in want:
            j = i + 1
            if key.group(2):   # flow style: up to the line that closes the list
                j = i
                while "]" not in lines[j].split("#")[0]:
                    j += 1
                j += 1
            else:              # block style: the item lines
                item = re.match(r"^(\s+)- ", lines[j]) if j < len(lines) else None
                indent = item.group(1) if item else key.group(1) + "  "
                while j < len(lines) and re.match(rf"^{indent}- ", lines[j]):
                    j += 1
            new = _flow(key.group(1), want[stage])
            body = stages[stage].get("do", stages[stage])
            if [d if isinstance(d, str) else next(iter(d)) for d in body["deps"]] != want[stage]:
                changed.append(stage)
            out.extend(new)
            i = j
            continue
        out.append(line)
        i += 1
    if "".join(out) != text:
        tmp = root / ".dvc.yaml.tmp"
        tmp.write_text("".join(out))
        tmp.replace(root / "dvc.yaml")
    return changed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path.cwd()
    if "--write" in args:
        for stage in write(root):
            print(f"dvc.yaml: deps of '{stage}' regenerated from its imports")
        return 0
    problems = drift(root)
    for stage, (missing, extra) in problems.items():
        if missing:
            print(f"dvc.yaml: stage '{stage}' imports what its deps do not list: {', '.join(missing)}")
        if extra:
            print(f"dvc.yaml: stage '{stage}' lists deps it does not import: {', '.join(extra)}")
    if problems:
        print("run `python -m infonce_lab.devtools.deps --write` to regenerate them")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
