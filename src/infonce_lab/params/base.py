"""What every params module shares: strict models, names, the error type."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[A-Za-z0-9_]+$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
PosFloat = Annotated[float, Field(gt=0.0)]
NonNegFloat = Annotated[float, Field(ge=0.0)]
PosInt = Annotated[int, Field(ge=1)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
# numpy's legacy and torch's generators take seeds below 2**32 and 2**64; a seed is a label, so
# the smaller range loses nothing.
Seed = Annotated[int, Field(ge=0, lt=2**32)]
Threads = Annotated[int, Field(ge=1, le=1024)]


class ConfigError(ValueError):
    """A params.yaml problem, already phrased for the user (dotted key, value, what is allowed)."""


class Strict(BaseModel):
    """Base model: unknown keys are errors, never silently ignored."""

    # allow_inf_nan=False: `.inf` or `.nan` anywhere (a temperature, a learning rate) is an error
    # with its key, not a run with zero gradients.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


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
