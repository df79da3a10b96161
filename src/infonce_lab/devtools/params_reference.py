"""``docs/params.md``, generated from the params schema: every key with what it accepts and its
default, one table per section, each section introduced by its schema class's docstring.

    python -m infonce_lab.devtools.params_reference           # rewrite docs/params.md
    python -m infonce_lab.devtools.params_reference --check   # exit 1 if it is stale

Hand-kept references drift from the schema; this one cannot (``tests/devtools`` runs the check).
Named sections (``losses.<name>``, ``datasets.<name>`` …) get one table per ``kind``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from infonce_lab.io import write_text_atomic
from infonce_lab.params import Params

PAGE = Path("docs/params.md")
HEADER = """# Params reference

Generated from the schema (`src/infonce_lab/params/`) by
`python -m infonce_lab.devtools.params_reference`; a test fails when it is stale. Every key is
optional unless its default says *required*; an unknown key is an error naming it. `params.yaml`
holds the default study, with a comment on each choice; [changing the study](changing-the-study.md)
shows how to change it.
"""

_BOUNDS = {annotated_types.Gt: ("gt", "> {}"), annotated_types.Ge: ("ge", "≥ {}"),
           annotated_types.Lt: ("lt", "< {}"), annotated_types.Le: ("le", "≤ {}"),
           annotated_types.MinLen: ("min_length", "length ≥ {}"),
           annotated_types.MaxLen: ("max_length", "length ≤ {}")}


def _constraints(metadata: list[Any]) -> list[str]:
    out = []
    for m in metadata:
        for kind, (attribute, text) in _BOUNDS.items():
            if isinstance(m, kind):
                value = getattr(m, attribute)
                out.append(text.format(f"2^{value.bit_length() - 1}" if isinstance(value, int)
                                       and value > 2**20 and value & (value - 1) == 0 else value))
        if getattr(m, "pattern", None):
            out.append("a name: letters, digits, _" if "A-Za-z0-9_" in m.pattern
                       else f"matching {m.pattern}")
    return out


def _section(t: Any) -> type[BaseModel] | None:
    return t if inspect.isclass(t) and issubclass(t, BaseModel) else None


def describe(t: Any) -> str:
    """A type as a reader says it: ``int ≥ 1``, ``one of a, b``, ``list of float``."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is Annotated:
        base, *meta = args
        bounds = _constraints([*meta, *[x for m in meta if isinstance(m, FieldInfo)
                                        for x in m.metadata]])
        return f"{describe(base)} ({', '.join(bounds)})" if bounds else describe(base)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" if a is not None else "`null`" for a in args) \
            if len(args) > 1 else f"`{args[0]}`"
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        text = " or ".join(describe(a) for a in members)
        return f"{text} or `null`" if len(members) < len(args) else text
    if origin in (list, tuple) or t in (list, tuple):
        return f"list of {describe(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping of name → {describe(args[1])}"
    if (section := _section(t)) is not None:
        return f"section `{section.__name__}`"
    return getattr(t, "__name__", str(t))


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "*required*"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "(section)"
    return f"`{json.dumps(value, ensure_ascii=False, default=str)}`"


def _doc(model: type[BaseModel]) -> str:
    doc = inspect.getdoc(model) or ""
    if doc == inspect.getdoc(BaseModel) or model.__doc__ is None:
        return ""
    return " ".join(doc.split("\n\n")[0].split())


def _members(t: Any) -> list[type[BaseModel]]:
    """The section classes a field holds: itself, a union's members, a mapping's values."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is Annotated:
        return _members(args[0])
    if origin in (Union, types.UnionType):
        return [m for a in args for m in _members(a)]
    if origin is dict:
        return _members(args[1])
    return [s] if (s := _section(t)) is not None else []


def sections(model: type[BaseModel], path: str, within: str = ""
             ) -> Iterator[tuple[str, type[BaseModel], str]]:
    """(dotted path, class, the kind it sits in) of ``model`` and every section below it, depth
    first; ``within``: the ``kind`` of the nearest named section above (two kinds may hold
    sections of the same name)."""
    yield path, model, within
    kind = model.model_fields.get("kind")
    if kind is not None and path.endswith("<name>"):
        within = describe(kind.annotation)
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if typing.get_origin(annotation) is Annotated:
            annotation = typing.get_args(annotation)[0]
        named = typing.get_origin(annotation) is dict
        for member in _members(field.annotation):
            yield from sections(member, f"{path}.{name}" + (".<name>" if named else ""), within)


def page() -> str:
    out = [HEADER]
    for path, model, within in sections(Params, ""):
        path = path.lstrip(".") or "(top level)"
        kind = model.model_fields.get("kind")
        if kind is not None and path.endswith("<name>"):
            title = f"`{path}` — kind {describe(kind.annotation)}"
        else:
            title = f"`{path}`" + (f" (kind {within})" if within else "")
        out.append(f"\n## {title}\n")
        if doc := _doc(model):
            out.append(f"{doc}\n")
        out.append("| key | accepts | default |\n|---|---|---|")
        for name, field in model.model_fields.items():
            accepts = describe(field.annotation)
            if bounds := _constraints(field.metadata):
                accepts += f" ({', '.join(bounds)})"
            cells = (f"`{name}`", accepts, _default(field))
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write (or check) docs/params.md from the schema.")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/params.md is stale")
    parser.add_argument("--page", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        current = args.page.read_text() if args.page.is_file() else ""
        if current != text:
            print(f"{args.page} is stale: run `python -m infonce_lab.devtools.params_reference`",
                  file=sys.stderr)
            return 1
        return 0
    write_text_atomic(args.page, text)
    print(f"wrote {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
