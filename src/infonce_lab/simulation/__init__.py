"""Simulations of the theory papers' claims (annealing, geometry, Wang–Isola), pure and vectorised
over chains and particles: annealed Langevin dynamics on products of spheres (``langevin``), the S0
double well (``double_well``), its angle integrator on S¹ (``angle_langevin``) and experiment
(``s0``), and trapping estimators (``trapping``); the InfoNCE landscape of S1 (``landscape``; in
angle coordinates of (S¹)^N, ``circle``), its watershed barriers and quenches (``barriers``) and the
S1 trapping run (``s1``); Riemannian Hessians (``hessian``), Prop. C.2's minimizers (``minimizers``)
and barriers against the number of negatives (``negatives``); large-N limits (``large_batch``);
Gibbs equilibrium and the modality gap (``population``); the lifted energy (``lifted_energy``),
the link theory (``link_theory``), Wang–Isola's alignment-only collapse (``au_collapse``) and
mini-batch SGD's own noise against the SDE's on S1 (``sgd_noise``). Every function takes numbers
and returns numbers; each experiment's params section names the function that runs it
(:func:`runner`)."""

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

# Discovered, not listed: an experiment's function may live in any module (and the dvc.yaml deps
# of the simulate stage, read off its imports, then cover the whole package).
MODULES = tuple(m.name for m in pkgutil.iter_modules(__path__))


def runner(spec: str) -> Callable[..., dict[str, Any]]:
    """The function ``spec`` = "<module>:<function>" of this package (an experiment's ``RUNS``)."""
    module, _, function = spec.partition(":")
    if module not in MODULES:
        raise ValueError(f"{spec!r}: no module {module!r} in {__name__} ({', '.join(MODULES)})")
    return getattr(importlib.import_module(f"{__name__}.{module}"), function)


__all__ = ["MODULES", "runner"]
