"""What every stage script shares: load and validate params first, turn known errors into a
one-paragraph message and a non-zero exit instead of a traceback."""

from __future__ import annotations

import functools
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from infonce_lab.config import ConfigError, Params, load_params

F = TypeVar("F", bound=Callable[..., Any])

PARAMS_FILE = "params.yaml"


def params_or_exit(path: str = PARAMS_FILE) -> Params:
    try:
        return load_params(path)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def stage(fn: F) -> F:
    """Decorate a Typer command: report expected failures cleanly and time the stage.

    Set ``INFONCE_LAB_DEBUG=1`` to see the traceback behind such a message.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
        except (ConfigError, FileNotFoundError, FloatingPointError, ValueError) as exc:
            if os.environ.get("INFONCE_LAB_DEBUG"):
                traceback.print_exc()
            fail(str(exc))
        print(f"[{fn.__module__}] done in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        return out

    return wrapper  # type: ignore[return-value]
