"""``python -m infonce_lab.params [params.yaml]``: validate, hold the study's memory estimates
against this machine, and exit (2 on a problem)."""

from __future__ import annotations

import sys

from infonce_lab.params import ConfigError, load_params, params_hash
from infonce_lab.params.footprint import check_memory

try:
    p = load_params(sys.argv[1] if len(sys.argv) > 1 else "params.yaml")
    check_memory(p)  # every stage's estimate against this machine
except ConfigError as exc:
    print(exc, file=sys.stderr)
    raise SystemExit(2) from None
print(f"params OK: {len(p.runs())} run(s), hash {params_hash(p)}")
