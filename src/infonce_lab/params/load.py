"""Reading params.yaml: YAML → validated :class:`Params`, errors phrased with the dotted key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from infonce_lab.params.base import (
    PATTERN_WORDS,
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
        if e["loc"] and e["loc"][-1] == "[key]":   # pydantic's mark for a mapping's key
            section = ".".join(_location(e["loc"][:-2], raw)) or "the top level"
            words = PATTERN_WORDS.get((e.get("ctx") or {}).get("pattern")) or e["msg"]
            name = str(e["input"])
            shown = repr(name) if len(name) <= 60 else f"{name[:40]!r}… ({len(name)} characters)"
            lines.append(f"  - {section}: the name {shown} is not allowed: {words}")
        elif e["type"] == "union_tag_invalid":
            ctx = e.get("ctx") or {}
            lines.append(f"  - {key}.kind = {ctx.get('tag')!r}: expected one of "
                         f"{ctx.get('expected_tags')}")
        elif e["type"] == "extra_forbidden":
            lines.append(f"  - {key}: unknown key (value {e['input']!r}); check the spelling")
        elif e["type"] == "missing":
            lines.append(f"  - {key}: required key is missing")
        elif e["type"] == "string_pattern_mismatch" and (
                words := PATTERN_WORDS.get((e.get("ctx") or {}).get("pattern"))):
            lines.append(f"  - {key} = {e['input']!r}: expected {words}")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(f"  - {key} = {e['input']!r}: {msg}")
    return "\n".join(lines)


def parse_params(raw: Any, source: str = "params.yaml") -> Params:
    """Validate an already-loaded mapping; raise :class:`ConfigError` with a readable message."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(raw).__name__}")
    if odd := _non_name_keys(raw, []):
        raise ConfigError(f"{source}: invalid parameters ({len(odd)} problem(s)):\n"
                          + "\n".join(odd))
    try:
        params = Params.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_format_error(err, source, raw)) from None
    if problems := _label_problems(params):
        raise ConfigError("\n".join([f"{source}: invalid parameters ({len(problems)} "
                                     "problem(s)):", *(f"  - {p}" for p in problems)]))
    return params


def _non_name_keys(node: Any, at: list[str]) -> list[str]:
    """Keys that are no name: YAML lets a list, a mapping, a boolean or a number be a key
    (``? [a, b]``), which no section of the schema has."""
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str):
                what = "a list" if isinstance(k, tuple | list) else type(k).__name__
                where = ".".join(at) or "the top level"
                out.append(f"  - {where}: a key that is {what} ({k!r}); keys are names")
            else:
                out += _non_name_keys(v, [*at, k])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _non_name_keys(v, [*at, str(i)])
    return out


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


def read_yaml(path: str | Path) -> Any:
    """A params file as DVC reads it: YAML 1.2 through ruamel.yaml's safe loader (DVC's own
    parser), so that what DVC hashes is what the stages run — merge keys followed, duplicate keys
    refused with their line, no tags that build objects. A value that YAML 1.1 (PyYAML, and
    most YAML a researcher has met) reads otherwise is refused with its key and both readings:
    ``010`` (10, or 8), ``2:08`` (a string, or 128), ``yes`` (a string, or true), ``0o17``. A number
    both read as the same number (``1e-3``: a float, or the text of one) is not a disagreement."""
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import YAMLError

    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        bad = err.object[err.start:err.start + 1]
        raise ConfigError(f"{path}: not UTF-8 (byte {err.start} is {bad!r}); save it as UTF-8"
                          ) from None
    _check_nesting(text, path)
    try:
        # DVC's call (YAML(typ="safe"): libyaml's parser where installed, ruamel's resolver and
        # constructor), composed first so that the expansion is counted before anything is built
        loader, _ = YAML(typ="safe").get_constructor_parser(text)
        node = loader.get_single_node()
        _check_expansion(node, path)
        data = None if node is None else loader.construct_document(node)
    except RecursionError:
        raise ConfigError(f"{path}: not valid YAML: nested too deeply to read") from None
    except DuplicateKeyError as err:
        key = err.problem.split('"')[1] if err.problem and '"' in err.problem else "?"
        raise ConfigError(f"{path}: not valid YAML: duplicate key {key!r} "
                          f"(line {err.problem_mark.line + 1})") from None
    except YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    try:
        old = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError:
        return data        # YAML 1.1 cannot read it at all: nothing to disagree with
    problems = _disagreements(old, data, [])
    if problems:
        raise ConfigError("\n".join([f"{path}: values YAML 1.1 and YAML 1.2 (DVC) read "
                                     f"differently ({len(problems)}):", *problems,
                                     "  write each one unambiguously: quote a string, write a "
                                     "number in plain decimal, a boolean as true or false"]))
    return data


# A params file expands to a few thousand values; aliases that multiply each other (a "billion
# laughs" file) would expand to billions, which every later walk would visit. Its deepest value
# sits 6 levels down; thousands of nested lists overflow recursive readers (DVC's among them).
_MAX_VALUES = 200_000
_MAX_DEPTH = 64


def _check_nesting(text: str, path: Path) -> None:
    """Refuse text nested deeper than :data:`_MAX_DEPTH` before any parser sees it: the C
    composer under ruamel (and so DVC) recurses once per level and overflows the C stack, a
    segmentation fault no ``except`` catches, near 100,000 levels. Counted lexically: brackets
    and braces outside quotes and comments, plus each line's indentation and leading ``- ``."""
    depth, quote = 0, ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip(" ")
        block = (len(line) - len(stripped)) // 2
        while stripped.startswith(("- ", "? ")):
            block, stripped = block + 1, stripped[2:].lstrip(" ")
        for i, ch in enumerate(line):
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "'\"" and depth:   # only a flow collection's quotes can hide a bracket
                quote = ch
            elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
                break
            elif ch in "[{":
                depth += 1
                if depth + block > _MAX_DEPTH:
                    raise ConfigError(f"{path}: values nested more than {_MAX_DEPTH} levels deep "
                                      f"(line {number}): not a params file")
            elif ch in "]}":
                depth = max(0, depth - 1)
        if block > _MAX_DEPTH:
            raise ConfigError(f"{path}: values nested more than {_MAX_DEPTH} levels deep "
                              f"(line {number}): not a params file")


def _check_expansion(root: Any, path: Path) -> None:
    """Refuse a document whose aliases expand it beyond :data:`_MAX_VALUES` values, counted on the
    node graph (each node once) before anything is built."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    sizes: dict[int, int] = {}

    def size(node: Any, depth: int = 1) -> int:
        if depth > _MAX_DEPTH:
            raise ConfigError(f"{path}: values nested more than {_MAX_DEPTH} levels deep (line "
                              f"{node.start_mark.line + 1}): not a params file")
        if id(node) in sizes:
            return sizes[id(node)]
        if isinstance(node, SequenceNode):
            n = 1 + sum(size(c, depth + 1) for c in node.value)
        elif isinstance(node, MappingNode):
            n = 1 + sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        else:
            n = 1
        sizes[id(node)] = n
        return n

    if root is not None and (n := size(root)) > _MAX_VALUES:
        raise ConfigError(f"{path}: its aliases expand it to {n:,} values (more than "
                          f"{_MAX_VALUES:,}): not a params file")


def _same(old: Any, new: Any) -> bool:
    """Whether two scalar readings mean the same value (``'1e-3'`` and 0.001 do: the schema reads
    a number written as text)."""
    if type(old) is type(new) or (isinstance(old, int | float) and isinstance(new, int | float)
                                  and not isinstance(old, bool) and not isinstance(new, bool)):
        return old == new
    if isinstance(old, str) and isinstance(new, float):
        try:
            return float(old) == new
        except ValueError:
            return False
    return False


def _disagreements(old: Any, new: Any, at: list[str]) -> list[str]:
    """Every key of the YAML 1.2 reading ``new`` whose YAML 1.1 reading ``old`` differs."""
    where = ".".join(at) or "(the file)"
    if isinstance(new, dict) and isinstance(old, dict):
        out: list[str] = []
        if len(old) != len(new):
            return [f"  - {where}: keys {list(old)} (YAML 1.1) against {list(new)} (YAML 1.2)"]
        for (k_old, v_old), (k_new, v_new) in zip(old.items(), new.items(), strict=True):
            if not _same(k_old, k_new):
                out.append(f"  - {'.'.join([*at, str(k_new)])}: a key YAML 1.1 reads as "
                           f"{k_old!r}, YAML 1.2 as {k_new!r}")
            out += _disagreements(v_old, v_new, [*at, str(k_new)])
        return out
    if isinstance(new, list) and isinstance(old, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new, strict=True))
                for p in _disagreements(a, b, [*at, str(i)])]
    if isinstance(new, dict | list) or isinstance(old, dict | list) or not _same(old, new):
        return [f"  - {where} = {old!r} in YAML 1.1, {new!r} in YAML 1.2 (DVC)"]
    return []


def load_raw(path: str | Path = "params.yaml") -> Any:
    """A params file's mapping as DVC reads it, or :class:`ConfigError` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found (run from the repository root)")
    try:
        return read_yaml(path)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None


def load_params(path: str | Path = "params.yaml") -> Params:
    return parse_params(load_raw(path), str(path))


def params_hash(params: Params) -> str:
    """A short, stable hash of the validated parameters (for provenance)."""
    blob = json.dumps(params.model_dump(mode="json"), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["load_params", "load_raw", "params_hash", "parse_params", "read_yaml"]
