"""``infonce_lab.params`` re-exports each schema module's ``__all__``: every public name the module
defines, and nothing it imports (no ``math``, ``yaml`` or ``Path`` through the package)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import infonce_lab.params as params

# The modules the package star-imports, read from its __init__.py.
MODULES = sorted(node.module.rsplit(".", 1)[1]
                 for node in ast.parse(Path(params.__file__).read_text()).body
                 if isinstance(node, ast.ImportFrom) and [a.name for a in node.names] == ["*"])


def _defined(module: str) -> set[str]:
    """The public names ``module`` defines at its top level (classes, functions, assignments)."""
    tree = ast.parse(Path(importlib.import_module(f"infonce_lab.params.{module}").__file__)
                     .read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("module", MODULES)
def test_each_schema_module_exports_what_it_defines(module: str) -> None:
    mod = importlib.import_module(f"infonce_lab.params.{module}")
    assert set(mod.__all__) == _defined(module)


def test_the_package_holds_the_modules_exports_and_nothing_imported() -> None:
    exported = {n for m in MODULES for n in importlib.import_module(
        f"infonce_lab.params.{m}").__all__}
    assert exported <= set(vars(params))
    for leaked in ("math", "yaml", "Path", "Annotated", "Field", "dataclass"):
        assert not hasattr(params, leaked), leaked
