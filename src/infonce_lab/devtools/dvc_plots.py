"""``python -m infonce_lab.devtools.dvc_plots``: rewrite dvc.yaml's generated ``plots:`` section
from params.yaml (:mod:`infonce_lab.pipeline.dvc_plots`; the report stage does it too), or with
``--check`` exit 1 if it does not match. A test runs ``--check``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infonce_lab.params import load_params
from infonce_lab.pipeline.dvc_plots import MARKER, plots_section, refresh, render, split

__all__ = ["MARKER", "main", "plots_section", "refresh", "render", "split"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write dvc.yaml's top-level plots: section.")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--dvc-yaml", type=Path, default=Path("dvc.yaml"))
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the section does not match params.yaml")
    args = parser.parse_args(argv)
    text = args.dvc_yaml.read_text()
    stages, section = split(text)
    params = load_params(args.params)
    wanted = render(params)
    if args.check:
        if section != wanted:
            print(f"{args.dvc_yaml}: the plots section does not match {args.params}'s study; "
                  "run `python -m infonce_lab.devtools.dvc_plots`", file=sys.stderr)
            return 1
        return 0
    if not section:
        args.dvc_yaml.write_text(stages.rstrip("\n") + "\n\n" + wanted)
    elif not refresh(params, args.dvc_yaml):
        return 0
    print(f"{args.dvc_yaml}: plots section written ({len(plots_section(params))} plots)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
