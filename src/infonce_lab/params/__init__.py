"""Typed models of ``params.yaml``: the one place that validates input, one module per concern.

Every stage calls :func:`load_params` before it does any work, so a bad value fails within a
second, names its dotted key (``training.batch_size``), shows the offending value and says what is
allowed — and no output has been touched yet.

Named sections (``backbones``, ``losses``, ``schedules``, ``datasets``) are dictionaries of
configurations keyed by a name that the ``study`` lists refer to. A configuration is one element
of ``study.datasets × backbones × losses × schedules`` (plus ``primary:``'s, each at its own
seeds), a run is a configuration at one seed, and one pretrain stage instance trains every seed
of a configuration; ids join the names with ``-`` (see :class:`RunId`), which is why names may
only use letters, digits and ``_``. Kinds are discriminated unions (``kind:``); the error
locations derive the kind tags from them.
"""


# Every schema name, importable from ``infonce_lab.params``: each module's ``__all__``, the public
# names it defines (tests/params/test_exports.py), never what it imports.
from infonce_lab.params.base import *  # noqa: F403
from infonce_lab.params.data import *  # noqa: F403
from infonce_lab.params.evaluation import *  # noqa: F403
from infonce_lab.params.load import *  # noqa: F403
from infonce_lab.params.models import *  # noqa: F403
from infonce_lab.params.objectives import *  # noqa: F403
from infonce_lab.params.simulation import *  # noqa: F403
from infonce_lab.params.study import *  # noqa: F403
from infonce_lab.params.tails import *  # noqa: F403
from infonce_lab.params.text import *  # noqa: F403
from infonce_lab.params.training import *  # noqa: F403
