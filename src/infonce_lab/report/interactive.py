"""Interactive figures for the page: Vega-Lite specifications (data inlined) rendered by the
vega, vega-lite and vega-embed builds vendored in ``.dvc/plots/offline.html`` — the page stays one
offline file. Each has a static PNG beside it, for the Markdown report and for print."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

VENDORED = Path(".dvc/plots/offline.html")
_SCRIPT = re.compile(r'<script data-vendored="([^"]+)">\n(.*?)\n</script>', re.S)


def vendored_scripts(path: Path = VENDORED) -> dict[str, str]:
    """{"vega@5.33.1": source, …} from the offline plots template, in load order."""
    found = dict(_SCRIPT.findall(path.read_text(encoding="utf-8")))
    names = [k.split("@")[0] for k in found]
    if names != ["vega", "vega-lite", "vega-embed"]:
        raise ValueError(f"{path}: expected the vendored vega, vega-lite and vega-embed builds, "
                         f"found {names or 'none'}; rebuild it with "
                         "`python -m infonce_lab.devtools.vega_offline`")
    # The page inlines these unescaped (they are code, from DVC's own build): refuse anything
    # that could close the script element early.
    for name, source in found.items():
        if "</script" in source.lower():
            raise ValueError(f"{path}: the vendored {name} contains '</script'; rebuild it with "
                             "`python -m infonce_lab.devtools.vega_offline`")
    return found


def _finite(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def au_plane_spec(encoders: pd.DataFrame) -> dict[str, Any]:
    """Wang & Isola's plane, one point per encoder: hover names it (run, loss, schedule, seed,
    accuracy); clicking a legend entry shows only that loss or baseline."""
    df = encoders.dropna(subset=["geometry.alignment", "geometry.uniformity"])
    rows = [{"encoder": r["encoder_id"],
             "what": r["encoder.loss"] if r["encoder.kind"] == "trained" else r["encoder.kind"],
             "schedule": r.get("encoder.schedule") if r["encoder.kind"] == "trained" else "",
             "seed": _finite(r.get("encoder.seed")),
             "alignment": float(r["geometry.alignment"]),
             "uniformity": float(r["geometry.uniformity"]),
             "linear": _finite(float(r["linear.test_acc"]))}
            for _, r in df.iterrows()]
    pick = {"name": "what", "select": {"type": "point", "fields": ["what"]}, "bind": "legend"}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "width": 640, "height": 400, "data": {"values": rows}, "params": [pick],
        "mark": {"type": "point", "filled": True, "size": 70, "stroke": "black",
                 "strokeWidth": 0.4},
        "encoding": {
            "x": {"field": "alignment", "type": "quantitative", "scale": {"zero": False},
                  "title": "alignment of two augmented test views, backbone h (lower = better)"},
            "y": {"field": "uniformity", "type": "quantitative", "scale": {"zero": False},
                  "title": "uniformity of test features, backbone h (lower = better)"},
            "shape": {"field": "what", "type": "nominal", "title": "loss or baseline"},
            "color": {"field": "linear", "type": "quantitative", "title": "linear test acc",
                      "scale": {"scheme": "viridis"}},
            "opacity": {"condition": {"param": "what", "value": 1}, "value": 0.08},
            "tooltip": [{"field": "encoder"}, {"field": "what", "title": "loss / baseline"},
                        {"field": "schedule"}, {"field": "seed"},
                        {"field": "linear", "format": ".4f", "title": "linear test acc"},
                        {"field": "alignment", "format": ".4f"},
                        {"field": "uniformity", "format": ".4f"}]}}
