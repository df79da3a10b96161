"""What every params module shares: strict models, names, the error type."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

NAME_PATTERN = r"^[A-Za-z0-9_]+$"
# A name becomes part of run ids (four names and a seed joined by "-") and so of file names,
# which most file systems cap at 255 bytes.
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=48)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
PosFloat = Annotated[float, Field(gt=0.0)]
NonNegFloat = Annotated[float, Field(ge=0.0)]
PosInt = Annotated[int, Field(ge=1)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
# numpy's legacy and torch's generators take seeds below 2**32 and 2**64; a seed is a label, so
# the smaller range loses nothing.
Seed = Annotated[int, Field(ge=0, lt=2**32)]
Threads = Annotated[int, Field(ge=1, le=1024)]
# Ranges a researcher could mean, so that a finite but absurd value (lr 1e300, a subnormal τ) is
# refused at its key instead of training on garbage or overflowing later: LARS runs SimCLR at
# lr ≈ 5 (0.3 × 4096/256), the papers' τ lie in 0.01–2 and β in 1–10³.
LearningRate = Annotated[float, Field(gt=0.0, le=100.0)]
WeightDecay = Annotated[float, Field(ge=0.0, le=1.0)]
TAU_MIN = 1e-4
TAU_MAX = 1e4
Temperature = Annotated[float, Field(ge=TAU_MIN, le=TAU_MAX)]
# A run's steps at most: the loop computes every step's τ and learning rate before the first
# (≈ 70 B each), and the validator evaluates every step's τ (≈ 0.2 µs each); 10⁷ steps is
# ImageNet at batch 256 for 2,000 epochs.
MAX_RUN_STEPS = 10_000_000
# A title is one line of the page: a newline would start headings and tables of its own.
ONE_LINE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
OneLine = Annotated[str, Field(pattern=ONE_LINE_PATTERN, max_length=200)]
# A folder the stages read by hand-given path: inside the repository, where dvc.yaml's deps and
# `dvc status` see it (a download kept elsewhere is linked in: ln -s /data/x data/x).
REPO_PATH_WORDS = ("a path inside the repository, relative to its root (no leading / or ~, no "
                   "..); link a folder kept elsewhere in: ln -s /data/x data/x")


def inside_repository(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    if (not path or path.startswith(("/", "~")) or ".." in parts or len(path) > 1000
            or any(ord(c) < 32 or ord(c) == 127 for c in path)):
        raise ValueError(f"expected {REPO_PATH_WORDS}")
    return path


RepoPath = Annotated[str, AfterValidator(inside_repository)]
# What each pattern means, for the error messages (a regular expression says it to few readers).
PATTERN_WORDS = {
    NAME_PATTERN: "letters, digits and _ only (a name becomes part of run ids and file names)",
    ONE_LINE_PATTERN: "one line of text (no newline, tab or other control character)",
}


class MultipliesWork:
    """Marks a count the work of its stage grows with (``Annotated[int, …, WORK]``): epochs,
    chains, steps, replicates, draws, seeds. The work estimate (params/work.py) reads them."""

    def __repr__(self) -> str:
        return "WORK"


WORK = MultipliesWork()


class ConfigError(ValueError):
    """A params.yaml problem, already phrased for the user (dotted key, value, what is allowed)."""


class Strict(BaseModel):
    """Base model: unknown keys are errors, never silently ignored."""

    # allow_inf_nan=False: `.inf` or `.nan` anywhere (a temperature, a learning rate) is an error
    # with its key, not a run with zero gradients.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _booleans_only_where_booleans_go(cls, data: Any) -> Any:
        # pydantic reads `epochs: true` as 1 and `lr: true` as 1.0. Such a value is wrapped so
        # that the field's own validation refuses it, at its key. A number given as text stays
        # accepted (`lr: "1e-3"`): the schema reads it as that number.
        # Inside a list too: `seeds: [true]` is seed 1 to pydantic.
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {k: _guard(v, fields[k].annotation) if k in fields else v for k, v in data.items()}


class _Boolean:
    """A YAML boolean given where a number or a name goes: no field type accepts it."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"{str(self.value).lower()} (a boolean)"


def _guard(value: Any, tp: Any) -> Any:
    """``value`` with each boolean that a field of type ``tp`` has no place for wrapped, in a
    list's entries as well."""
    if isinstance(value, bool):
        return value if _takes_bool(tp) else _Boolean(value)
    if isinstance(value, list) and (item := _item_type(tp)) is not None:
        return [_guard(v, item) for v in value]
    return value


def _item_type(tp: Any) -> Any:
    """The entry type of a list or tuple field (through Annotated and ``| None``); None when
    ``tp`` holds no sequence."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _item_type(typing.get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        found = [t for t in map(_item_type, typing.get_args(tp)) if t is not None]
        return found[0] if found else None
    if origin in (list, tuple):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return args[0] if args else None
    return None


def _takes_bool(tp: Any) -> bool:
    """Whether a field of type ``tp`` has a place for a boolean as such."""
    if tp is bool or tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _takes_bool(typing.get_args(tp)[0])
    if origin is Literal:
        return any(isinstance(a, bool) for a in typing.get_args(tp))
    if origin is Union or origin is types.UnionType:
        return any(_takes_bool(a) for a in typing.get_args(tp))
    return False


def _unique(v: list[Any]) -> list[Any]:
    if len(set(v)) != len(v):
        raise ValueError(f"entries must be unique, got {v}")
    return v


Unique = AfterValidator(_unique)  # in a list's Annotated: its entries must be unique


class _KeyProblem(ValueError):
    """Raised inside validators when the problem belongs to a key other than the one validated."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        super().__init__(f"{key} = {value!r}: expected {allowed}")
        self.key, self.value, self.allowed = key, value, allowed


# A download URL (a dataset mirror's, a text corpus's): https only — no file://, ftp:// or plain
# http through a params value; a file already on disk is placed in data/downloads/ by hand, where
# it is checked and used as is.
HttpsUrl = Annotated[str, Field(pattern=r"^https://[A-Za-z0-9.-]+(:[0-9]+)?/[^\s]*$")]

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["ConfigError", "HttpsUrl", "LearningRate", "NAME_PATTERN", "Name", "NonNegFloat",
    "ONE_LINE_PATTERN", "MultipliesWork", "OneLine", "PATTERN_WORDS", "PosFloat", "PosInt", "Probability", "RepoPath", "Seed", "Sha256",
    "MAX_RUN_STEPS", "REPO_PATH_WORDS", "Strict", "TAU_MAX", "TAU_MIN", "Temperature", "Threads", "Unique", "WORK", "WeightDecay",
    "inside_repository"]
