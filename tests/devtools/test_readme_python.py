"""The Python examples of the README and docs/ name functions that exist with the arguments shown: each block's
imports run, and each call's keyword arguments are parameters of the function it calls."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_readme_python_blocks_import_and_call_real_functions(repo_root: Path):
    pages = [repo_root / "README.md", *sorted((repo_root / "docs").glob("*.md"))]
    # a block inside a list item is indented as a whole
    blocks = [textwrap.dedent(b) for page in pages for b in BLOCK.findall(page.read_text())]
    assert len(blocks) >= 2
    for code in blocks:
        tree = ast.parse(code)
        names: dict[str, object] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                exec(compile(ast.Module([node], []), "<readme>", "exec"), names)  # noqa: S102
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in names and callable(names[node.func.id]):
                params = inspect.signature(names[node.func.id]).parameters
                assert len(node.args) <= len(params), ast.unparse(node)
                for kw in (k for k in node.keywords if k.arg is not None):  # not **mapping
                    assert kw.arg in params, f"{ast.unparse(node)}: no parameter {kw.arg}"
