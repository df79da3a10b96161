"""Full training state for resumable runs: written atomically, read with ``weights_only=True``.

A state holds everything the next step depends on — model and optimizer tensors, the loss's own
state (WEINCE's EMA), the step and position in the epoch, the epoch's permutation and every RNG
(the data generator, torch's global CPU and CUDA generators, numpy's) — so a killed run that
resumes from it ends with the same weights as an uninterrupted one (bit for bit on the CPU).

A ``fingerprint`` (a hash of whatever configuration shaped the run) guards against resuming a
state written under other params: a mismatch starts afresh instead of mixing two runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from infonce_lab.io import (
    CorruptFileError,
    reading,
    replace_atomic,
    verify_checksum,
    write_checksum,
)


def _numpy_state() -> dict[str, Any]:
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {"name": name, "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)), "pos": pos,
            "has_gauss": has_gauss, "cached": cached}


def _set_numpy_state(s: dict[str, Any]) -> None:
    np.random.set_state((s["name"], s["keys"].numpy().astype(np.uint32), int(s["pos"]),
                         int(s["has_gauss"]), float(s["cached"])))


def rng_state(gen: torch.Generator | None = None) -> dict[str, Any]:
    """torch's and numpy's global generators (and CUDA's), plus ``gen`` when given."""
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "numpy": _numpy_state()}
    if gen is not None:
        state["gen"] = gen.get_state()
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any], gen: torch.Generator | None = None) -> None:
    if gen is not None:
        gen.set_state(state["gen"])
    torch.set_rng_state(state["torch"])
    _set_numpy_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_state(path: str | Path, state: dict[str, Any]) -> None:
    """A kill during the write leaves the previous state intact (temporary file, then rename);
    its SHA-256 goes beside it, since zeroed bytes inside a tensor load without complaint. A kill
    between the two leaves a digest that does not match: the state is set aside, never used."""
    with replace_atomic(path) as tmp:
        torch.save(state, tmp)
    write_checksum(path)


def load_state(path: str | Path, fingerprint: str) -> dict[str, Any] | None:
    """The saved state, or None when there is none or it belongs to other params."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        verify_checksum(path, "It is set aside: the run starts afresh.")
        with reading(path, "resume state (torch.save)", "It is set aside: the run starts afresh."):
            state = torch.load(path, map_location="cpu", weights_only=True)
    except CorruptFileError as exc:
        # A resume state only saves time: one that cannot be read (a disk that filled mid-write,
        # a damaged file) must not block every rerun until someone deletes it by hand.
        print(f"warning: {exc}", file=sys.stderr, flush=True)
        path.unlink(missing_ok=True)
        return None
    if state.get("fingerprint") != fingerprint:
        return None
    return state
