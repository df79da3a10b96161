"""Profiles: named overrides of params.yaml (``profiles/<name>.yaml``), merged in place.

``infonce-lab profiles apply paper_vision`` (:mod:`infonce_lab.commands`) deep-merges the
profile into params.yaml (mappings merge key by key; lists and scalars are replaced), keeps params.yaml's comments
(ruamel.yaml round trip — DVC's own YAML library), validates the result before writing it, and
writes atomically, then rewrites dvc.yaml's generated top-level ``plots:`` for the new study.
``infonce-lab profiles list`` shows the profiles. Commit or ``dvc exp run`` as usual afterwards.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

from infonce_lab.io import write_text_atomic
from infonce_lab.params import ConfigError, parse_params

PROFILES = Path("profiles")


def deep_merge(base: Any, override: Any) -> Any:
    """``override`` into ``base`` (in place for mappings): mappings merge, the rest replaces."""
    if isinstance(base, dict) and isinstance(override, dict):
        for key, value in override.items():
            base[key] = deep_merge(base[key], value) if key in base else _own(value)
        _block_style(base)
        return base
    return _own(override)


def _own(value: Any) -> Any:
    """A copy of a profile's value, so that a node the profile shares (a YAML anchor and its
    aliases) becomes two: ruamel writes a shared node as ``&id`` and ``*id``, which DVC's own
    params editing (``dvc exp run -S``) then fails to read back."""
    return copy.deepcopy(value)


def _block_style(mapping: Any) -> None:
    """A flow-style mapping of params.yaml (``cifar10: {kind: cifar10}``) that a profile merged
    into is written in block style: ruamel writes what it now holds in flow style too, and a
    plain URL there (``{url: https://127.0.0.1:8443/c.tgz}``) is not valid YAML to DVC."""
    fa = getattr(mapping, "fa", None)  # ruamel's round-trip format attribute
    if fa is not None and fa.flow_style():
        fa.set_block_style()


def _yaml():  # noqa: ANN202
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    y.width = 100
    return y


def _load(y: Any, path: Path) -> Any:
    """ruamel's round trip refuses duplicate keys, as DVC does; say so with the file's name."""
    from ruamel.yaml import YAMLError

    try:
        return y.load(path.read_text())
    except YAMLError as err:
        detail = " ".join(str(err).split("To suppress this check")[0].split())
        raise ConfigError(f"{path}: not valid YAML: {detail}") from None


def apply(name: str, params: Path = Path("params.yaml"), profiles: Path = PROFILES) -> str:
    path = profiles / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in profiles.glob("*.yaml"))) or "none"
        raise ConfigError(f"{path}: no such profile (known: {known})")
    y = _yaml()
    merged = deep_merge(_load(y, params), _load(y, path))
    import json

    parse_params(json.loads(json.dumps(merged)), f"{params} + {path}")  # validate before writing
    buf = io.StringIO()
    y.dump(merged, buf)
    write_text_atomic(params, buf.getvalue())
    if (params.parent / "dvc.yaml").is_file():  # the plots list the study's runs: follow it
        from infonce_lab.devtools import dvc_plots

        dvc_plots.main(["--params", str(params)])
    return str(path)


def listing(profiles: Path = PROFILES) -> list[tuple[str, str]]:
    """(name, the first line of its leading comment) of every profile."""
    out = []
    for p in sorted(profiles.glob("*.yaml")):
        first = next((line for line in p.read_text().splitlines() if line.startswith("#")), "")
        out.append((p.stem, first.lstrip("# ")))
    return out
