"""``python -m infonce_lab.devtools.dvc_plots``: write reports/dvc.yaml, DVC's top-level plots,
from params.yaml (:mod:`infonce_lab.pipeline.dvc_plots`; the report stage does it too), or with
``--check`` exit 1 if it does not match. A test runs ``--check``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infonce_lab.params import load_params
from infonce_lab.pipeline.dvc_plots import PLOTS_FILE, plots_section, refresh, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=f"Write {PLOTS_FILE}: DVC's top-level plots.")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--root", type=Path, default=None,
                        help="the project (default: the folder of --params)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the file does not match params.yaml")
    args = parser.parse_args(argv)
    root = args.params.parent if args.root is None else args.root
    params = load_params(args.params)
    path = root / PLOTS_FILE
    if args.check:
        if not path.is_file() or path.read_text() != render(params):
            print(f"{path}: the plots do not match {args.params}'s study; "
                  "run `python -m infonce_lab.devtools.dvc_plots`", file=sys.stderr)
            return 1
        return 0
    if refresh(params, root):
        print(f"{path}: plots written ({len(plots_section(params))} plots)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
