"""The figure declarations draw what they declare: lines, error bars, bands, references, scales,
limits and legends, and a shared legend lists every label once in declared order."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from infonce_lab.report.plotting import Line, Panel, Ref, draw, figure, interval


def test_draw_puts_every_declared_artist_on_the_axis() -> None:
    fig, ax = plt.subplots()
    panel = Panel(
        [Line([1, 2, 4], [0.1, 0.2, 0.4], label="curve", band=([0.0, 0.1, 0.3], [0.2, 0.3, 0.5])),
         Line([1, 2], [0.3, 0.3], "s", "bars", yerr=[0.05, 0.1]),
         Line([1, 4], [0.0, 0.5], ":")],  # unlabelled: drawn, not in the legend
        [Ref(0.25, "line"), Ref((0.1, 0.2), "band"), Ref(2.0, vertical=True)],
        title="t", x="x", y="y", xscale="log2", yscale="log", xlim=(1, 8), legend=7)
    draw(ax, panel)
    assert ax.get_title() == "t" and ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert ax.get_yscale() == "log" and ax.get_xlim() == (1.0, 8.0)
    assert len(ax.containers) == 1  # the error bars
    assert len(ax.collections) >= 2  # the band under "curve" and the error bars' lines
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["curve", "line", "band", "bars"]
    # the band takes the colour of its line
    band = next(c for c in ax.collections if c.get_alpha() == 0.15)
    assert np.allclose(band.get_facecolor()[0][:3], plt.matplotlib.colors.to_rgb(ax.lines[0].get_color()))
    plt.close(fig)


def test_interval_turns_estimates_into_asymmetric_error_bars() -> None:
    got = interval([{"value": 1.0, "low": 0.5, "high": 2.0}, None, {"value": 3.0}])
    assert got["y"][0] == 1.0 and np.isnan(got["y"][1]) and got["y"][2] == 3.0
    assert got["yerr"][0][0] == 0.5 and got["yerr"][1][0] == 1.0 and np.isnan(got["yerr"][0][2])


def test_figure_is_a_png_of_the_declared_grid_with_one_shared_legend() -> None:
    panels = [Panel([Line([0, 1], [0, i], label=f"config {k}") for k in range(3)],
                    [Ref(0.5, "paper's value")]) for i in range(4)]
    seen: list[list[str]] = []
    original = plt.Figure.legend

    def spy(self: plt.Figure, handles: list, labels: list, **kw: object) -> object:
        seen.append(list(labels))
        return original(self, handles, labels, **kw)

    plt.Figure.legend = spy  # type: ignore[method-assign]
    try:
        png = figure(panels, (8, 6), rows=2, shared_legend=True)
    finally:
        plt.Figure.legend = original  # type: ignore[method-assign]
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.width > image.height > 100
    assert seen == [["config 0", "config 1", "config 2", "paper's value"]]
    assert not plt.get_fignums()  # closed after encoding
