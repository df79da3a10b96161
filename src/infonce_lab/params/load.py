"""Reading params.yaml: YAML → validated :class:`Params`, errors phrased with the dotted key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from infonce_lab.params.base import (
    ConfigError,
    _KeyProblem,
)
from infonce_lab.params.study import Params


def _location(loc: tuple[Any, ...], raw: Any) -> list[str]:
    """The dotted key of an error: pydantic's location without the tags it inserts for a
    discriminated union (``schedules.cosine.cosine.tau_min`` for the entry *named* cosine of
    kind cosine). Walking the input tells a tag from a key: a tag is the ``kind`` of the mapping
    it follows, and there is at most one per mapping; every other element is a key or index."""
    out: list[str] = []
    node, tag_taken = raw, False
    for p in loc:
        if isinstance(node, dict) and not tag_taken and node.get("kind") == p:
            tag_taken = True
            continue
        out.append(str(p))
        if isinstance(node, dict) and p in node or isinstance(node, list) and isinstance(p, int) and 0 <= p < len(node):
            node, tag_taken = node[p], False
        else:
            node = None
    return out


def _format_error(err: ValidationError, source: str, raw: Any) -> str:
    lines = [f"{source}: invalid parameters ({err.error_count()} problem(s)):"]
    for e in err.errors():
        ctx_err = (e.get("ctx") or {}).get("error")
        if isinstance(ctx_err, _KeyProblem):
            lines.append(f"  - {ctx_err}")
            continue
        key = ".".join(_location(e["loc"], raw)) or "<root>"
        if e["type"] == "union_tag_invalid":
            ctx = e.get("ctx") or {}
            lines.append(f"  - {key}.kind = {ctx.get('tag')!r}: expected one of "
                         f"{ctx.get('expected_tags')}")
        elif e["type"] == "extra_forbidden":
            lines.append(f"  - {key}: unknown key (value {e['input']!r}); check the spelling")
        elif e["type"] == "missing":
            lines.append(f"  - {key}: required key is missing")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(f"  - {key} = {e['input']!r}: {msg}")
    return "\n".join(lines)


def parse_params(raw: Any, source: str = "params.yaml") -> Params:
    """Validate an already-loaded mapping; raise :class:`ConfigError` with a readable message."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        params = Params.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_format_error(err, source, raw)) from None
    if problems := _label_problems(params):
        raise ConfigError("\n".join([f"{source}: invalid parameters ({len(problems)} "
                                     "problem(s)):", *(f"  - {p}" for p in problems)]))
    return params


def _label_problems(params: Params) -> list[_KeyProblem]:
    """A loss that reads class labels (the label oracle, ``mask_same_class``) listed by a study
    whose data have none: the text study's corpora are unlabelled sentences (SimCSE's
    unsupervised setting, Gao et al. 2021 §3), so its "same class" is undefined. Checked here,
    after the schema, because the loss and the study that lists it are different sections."""
    return [_KeyProblem(f"losses.{name}.mask_same_class", True,
                        f"false: text.study.losses[{i}] lists this loss, and the text study's "
                        "sentences have no class labels to mask (list it in study.losses or "
                        "primary.losses, which train on labelled images)")
            for i, name in enumerate(params.text.study.losses)
            if params.losses[name].needs_labels]


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.safe_load keeps the last of two equal keys; DVC refuses such a file. Refuse it here,
    first, with the line."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)   # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (line {key_node.start_mark.line + 1})",
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Any:
    """Safe YAML (no tags that build objects) with duplicate keys refused."""
    return yaml.load(Path(path).read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader


def load_params(path: str | Path = "params.yaml") -> Params:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found (run from the repository root)")
    try:
        raw = read_yaml(path)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    return parse_params(raw, str(path))


def params_hash(params: Params) -> str:
    """A short, stable hash of the validated parameters (for provenance)."""
    blob = json.dumps(params.model_dump(mode="json"), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["load_params", "params_hash", "parse_params", "read_yaml"]
