"""The S0 and geometry sections' templates (sections/s0.j2, sections/geometry.j2), each rendered
as both pages, rendered through the report's Jinja environments from the
section modules' context(): the real S0 results file (or a small synthetic one) and small synthetic
Gibbs, modality-gap, lifted-energy and large-batch files."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from infonce_lab.report.render import environment
from infonce_lab.report.sections import annealing_s0, geometry

REPO = Path(__file__).resolve().parents[2]
FIGURES = {n: "QUJD" for n in ("sim_s0_trap", "sim_s0_hazard", "sim_s0_fixed_beta",
                                "sim_large_batch", "sim_wang_isola", "sim_gibbs",
                                "sim_modality_gap", "sim_lifted_energy")}


def _section(kind: str, section: str, **ctx: Any) -> str:
    """A section's one template as the HTML page (kind "html") or a Markdown page renders it."""
    env = environment(markdown=kind == "md")
    return env.get_template(f"sections/{section}.j2").render(figures=FIGURES, fmt=kind, up="",
                                                             **ctx)


def _table_rows(text: str) -> list[str]:
    """The table rows of a rendered partial: HTML <tr> elements (which may span lines) or
    Markdown table lines."""
    if "<table" in text:
        return [r.replace("\n", " ") for r in text.split("<tr")[1:]]
    return [ln for ln in text.splitlines() if ln.startswith("| ")]


# --------------------------------------------------------------------------- synthetic S0
def _iv(value: float | None, half: float = 0.01) -> dict[str, Any]:
    if value is None:
        return {"value": None, "low": None, "high": None, "undefined": "no exit"}
    return {"value": value, "low": value - half, "high": value + half, "level": 0.95}


def _pair(step: float | None, half: float | None = None) -> dict[str, Any]:
    return {"step": _iv(step), "half_step": _iv(step if half is None else half)}


def _s0_synthetic() -> dict[str, Any]:
    ends = [10.0, 100.0, 1000.0, 10000.0]

    def occ(v: float) -> dict[str, Any]:
        return {f"{t:g}": _iv(v / (k + 1)) for k, t in enumerate(ends)}

    def sched(kind: str, c: float | None, frozen: float | None, hazard: bool) -> dict[str, Any]:
        e = {"kind": kind, "c_ratio": c, "beta_T": 6.02 if c else 100.0, "frozen_at": frozen,
             "gibbs": {f"{t:g}": 0.3 / (k + 1) for k, t in enumerate(ends)},
             "occupancy": {"step": occ(0.4), "half_step": occ(0.41)},
             "excess": _pair(0.123, 0.125), "follow": _pair(0.876),
             "stretch": _pair(None) if kind == "fast" else _pair(0.0456)}
        if hazard:
            e["hazard"] = {"step": {"ratio": _iv(0.987)}, "half_step": {"ratio": _iv(None)}}
        return e

    case = {"beta": 1.5, "beta_eff": 2.25, "dynamics": "P1", "start": "trap", "gibbs": 0.1108,
            "gibbs_other_law": 0.2085, "occupancy": _pair(0.115), "difference": _pair(0.004),
            "difference_other_law": _pair(-0.094)}
    run = {"eta": 0.05, "mass": _iv(0.147), "error": _iv(0.036),
           "predicted_error_gradient_noise": 0.031}
    return {
        "a": 0.5, "delta_e": 1.53125, "c_star": 0.6530612244897959, "chains": 40,
        "horizon": 10000.0, "K": 2.718281828459045, "dynamics": "P2",
        "convergence": {"dt": 0.05, "dt_half": 0.025}, "window_ends": ends,
        "freeze": {"bound": "Kramers rate out of the trap", "expected_crossings_after": 0.1},
        "schedules": {"log_c0.5": sched("log", 0.5, None, False),
                      "log_c2": sched("log", 2.0, 3207.5, True),
                      "linear": sched("fast", None, 10.5, False)},
        "ergodicity": {"burn_in": 100.0, "horizon": 1000.0, "chains": 64, "p1_beta": 1.5,
                       "p2_beta": 2.25, "cases": {"P1_beta1.5_from_trap": case}},
        "sgd": {"beta": 1.5, "beta_eff": 2.25, "burn_in": 100.0, "chains": 32, "horizon": 600.0,
                "convergence": {"eta": 0.05, "eta_half": 0.025}, "eta": 0.05, "gibbs": 0.1108,
                "grad_noise_sd": 1.3, "limit": _pair(0.0036, -0.0016), "runs": {"eta": run}},
        "chain_steps": {"annealing_step": 1000, "annealing_half_step": 2000, "arrhenius": 30,
                        "ergodicity": 40, "sgd": 50, "total": 3120, "ratio_to_reference": 2.5,
                        "reference_chain_steps": 1248},
        "seconds": 12.3,
    }


def _s0_sources() -> list[dict[str, Any]]:
    out = [_s0_synthetic()]
    path = REPO / "reports" / "sims" / "s0.json"
    if path.exists():
        real = json.loads(path.read_text())
        try:
            annealing_s0.context({"s0": real})
        except (KeyError, TypeError):  # a file from before the current format
            pass
        else:
            out.append(real)
    return out


@pytest.mark.parametrize("kind", ["html", "md"])
def test_s0_partial_shows_the_setup_and_a_row_per_schedule(kind: str):
    for raw in _s0_sources():
        s0 = annealing_s0.context({"s0": raw})
        text = _section(kind, "s0", s0=s0)
        assert "S0: annealing a double well" in text
        assert "{:.4f}".format(s0["c_star"]) in text and "{:.5f}".format(s0["delta_e"]) in text
        for r in s0["schedules"]:
            # once in the occupancy table, once in the regime-statistics table
            rows = [ln for ln in _table_rows(text)
                    if re.search(rf"(<td>|^\| ){re.escape(r['name'])}( \||</td>)",
                                 ln)]
            assert len(rows) == 2, (r["name"], rows)
        for name in ("sim_s0_trap", "sim_s0_hazard", "sim_s0_fixed_beta"):
            assert (f"figures/{name}.png" if kind == "md" else "base64,QUJD") in text
        assert "{:,}".format(s0["chain_steps"]["total"]) in text
        assert "Richardson limit" in text and "Ergodicity at fixed β" in text
    syn = _section(kind, "s0",
                  s0=annealing_s0.context({"s0": _s0_synthetic()}))
    # step / half step side by side; None as an em dash
    assert "0.123 / 0.125" in syn and "0.0456 / 0.0456" in syn and "0.987 / —" in syn
    assert "+0.004 [-0.006, +0.014]" in syn  # ergodicity difference with its interval
    assert "3207.5" in syn and "12 s" in syn


@pytest.mark.parametrize("kind", ["html", "md"])
def test_s0_partial_is_empty_without_the_file(kind: str):
    assert annealing_s0.context({}) is None
    assert _section(kind, "s0", s0=None).strip() == ""
    assert _section(kind, "s0").strip() == ""


# --------------------------------------------------------------------- synthetic geometry
def _t(value: float, half: float = 0.01, n: int = 8) -> dict[str, Any]:
    return {"value": value, "low": value - half, "high": value + half, "level": 0.95, "n": n}


def _steps(v: float, moved: float = 0.0) -> dict[str, Any]:
    return {"step": _t(v), "half_step": _t(v + moved)}


def _gibbs() -> dict[str, Any]:
    def row(tau: float, gibbs: float, diff: float) -> dict[str, Any]:
        return {"tau": tau, "gibbs_mass": gibbs, "mass": _steps(gibbs + diff, 0.002),
                "minus_gibbs": _steps(diff, 0.002)}

    return {"radius": 0.5, "uniform_mass": 0.12, "gibbs": {"n_samples": 120000},
            "convergence": {"steps": 800, "steps_doubled": 1600, "continued": True},
            "published": {"h": 0.35, "particles": 128, "seeds": 8,
                          "taus": [row(1.0, 0.19, 0.004), row(0.1, 0.71, 0.26)]},
            "bandwidth_test": {"particles": 256, "seeds": 4,
                               "by_bandwidth": [{"h": 0.1, "taus": [row(0.1, 0.71, 0.01)]}]}}


def _mg() -> dict[str, Any]:
    sig = [0.0, 0.35]

    def block(scale: float) -> dict[str, Any]:
        m = [scale * (0.01 + s) for s in sig]
        return {"d_sym_mean": m, "d_sym_sem": [0.01, 0.02], "d_sym_median": m,
                "d_sym_trimmed": [_t(v, 0.005, 6) for v in m]}

    outlier = {"sigma_mis": 0.35, "seed": 3, "d_sym": 53.0, "median_d_sym": 0.1,
               "d_sym_half_count": 14.0, "min_singular_ratio": 0.004, "collapsed": True,
               "singular_values_f": [1.0, 0.004], "singular_values_g": [0.9, 0.01],
               "det_fg_sign": -1.0, "occupied_bins": [8, 9]}
    return {"sigma_mis": sig, "seeds": 12, "trim": 0.25,
            "convergence": {"steps": 1000, "steps_doubled": 2000, "continued": True},
            "identity": {"d_sym_trimmed": [_t(0.01 + s, 0.005, 6) for s in sig]},
            "by_loss": {"symmetric": {"step": block(0.5), "half_step": block(0.5)},
                        "x_to_y": {"step": block(0.8), "half_step": block(0.8)}},
            "diagnosis": {"collapsed_per_seed": {"half_step": [[False] * 12,
                                                               [True] * 3 + [False] * 9]},
                          "outliers": {"half_step": [outlier]}}}


def _lifted_energy() -> dict[str, Any]:
    return {"kappa": 6.0, "weight": 0.7, "shift": 0.6, "sigma": 0.3,
          "quadrature": [{"tau": t, "half_f_sum": -2.85, "kl_smoothed_sum": 0.862,
                          "kl_sum": 1.537, "j_sym_smoothed": -3.286, "f_sym_lifted": -3.623,
                          "lifting_error": -0.3374} for t in (0.5, 0.1)],
          "monte_carlo": [{"tau": 0.1, "by_n": [{"n": n, "minus_smoothed": _t(0.0077, 0.01, 4),
                                                 "minus_lifted": _t(0.229, 0.01, 4)}
                                                for n in (64, 128)]}]}



def _large_batch() -> dict[str, Any]:
    return {"wang_isola": [{"tau": 0.5, "d": 8, "kappa_pos": 10.0, "anchors": 1000,
                            "replicates": 10, "estimates": {}}],
            "grad_consistency": [{"critic": "rbf", "tau": 0.5, "n_ref": 4096, "seeds": 20}],
            "value_gap": [{"critic": "rbf", "tau": 0.5, "n_ref": 16384, "seeds": 20}]}


def _geometry_sims() -> dict[str, Any]:
    return json.loads(json.dumps({"gibbs": _gibbs(), "modality_gap": _mg(),
                                  "lifted_energy": _lifted_energy(),
                                  "large_batch": _large_batch()}))


@pytest.mark.parametrize("kind", ["html", "md"])
def test_geometry_partial_shows_every_block(kind: str):
    geo = geometry.context(_geometry_sims())
    assert set(geo) == {"gibbs", "modality_gap", "lifted_energy", "large_batch"}
    text = _section(kind, "geometry", geometry=geo)
    for title in ("Large-batch consistency", "Gibbs equilibrium on S²", "Modality gap on S¹",
                  "lifted energy F^Sym"):
        assert title in text
    # a Gibbs row per (h, particles, τ), both step counts' estimates in it
    assert len(geo["gibbs"]["rows"]) == 3
    for r in geo["gibbs"]["rows"]:
        hits = [ln for ln in _table_rows(text)
                if f"{r['particles']} × {r['seeds']}" in ln and r["mass_doubled"] in ln
                and r["minus_gibbs_step"] in ln]
        assert len(hits) == 1, r
    assert "800 steps" in text and "1600 steps" in text
    # a modality-gap row per σ_mis, the outlier, the lifted-energy tables
    for r in geo["modality_gap"]["rows"]:
        assert r["symmetric"]["half_step"] in text and r["identity"] in text
    assert "53" in text and "14" in text and "8/9" in text
    assert "-0.337" in text and "+0.0077 [-0.0023, +0.0177]" in text
    assert "N_ref = 4096" in text
    for name in ("sim_large_batch", "sim_gibbs", "sim_modality_gap", "sim_lifted_energy"):
        assert (f"figures/{name}.png" if kind == "md" else "base64,QUJD") in text
    # Wang–Isola's limit is Theorem 1 of the alignment–uniformity paper: its own partial
    au = _section(kind, "au_empirical", geometry=geo)
    assert "κ_pos = 10" in au and "M → ∞" in au and "κ_pos" not in text


@pytest.mark.parametrize("kind", ["html", "md"])
def test_the_modality_gap_partial_shows_the_batch_negatives_arm(kind: str):
    sims = _geometry_sims()
    mg = sims["modality_gap"]
    mg["batch"], mg["convergence"]["verdict_at"] = 256, 2000
    arms = [("batch 64", 0.31), ("batch 256 (the experiment's run)", 0.32), ("batch 512", 0.33),
            ("batch 256, hard negatives (β = 1)", 0.34)]
    mg["batch_negatives"] = {
        "sigma_mis": 0.35, "gap_share": 0.5, "beta_hard": 1.0, "identity_d_sym_trimmed": _t(0.36),
        "arms": [{"name": name, "d_sym_trimmed": _steps(0.36 + v), "excess": _steps(v),
                  "minus_share_of_reference": _steps(v - 0.16, 0.004),
                  "excluded": {"step": 2, "half_step": 1}} for name, v in arms]}
    geo = geometry.context(sims)
    text = _section(kind, "geometry", geometry=geo)
    assert "verdicts at 2000 steps, 1000 steps the convergence check" in " ".join(text.split())
    rows = [r for r in _table_rows(text) if "<td>batch " in r or r.startswith("| batch ")]
    assert len(rows) == 4
    for (name, v), row in zip(arms, rows, strict=True):
        assert name.split(" (")[0] in row and f"+{v - 0.16:.3f}" in row
        assert f"+{v - 0.156:.3f}" in row
        assert "2 / 1" in row
    assert "σ_mis = 0.35" in text and "β = 1" in text


@pytest.mark.parametrize("kind", ["html", "md"])
def test_geometry_partial_is_empty_without_files(kind: str):
    assert _section(kind, "geometry", geometry={}).strip() == ""
    assert _section(kind, "geometry").strip() == ""
    # a file from before the convergence runs is skipped by context(), so shows nothing
    old = copy.deepcopy(_geometry_sims())
    del old["gibbs"]["convergence"]
    text = _section(kind, "geometry", geometry=geometry.context(old))
    assert "Gibbs equilibrium" not in text and "Modality gap" in text


@pytest.mark.parametrize("kind", ["html", "md"])
def test_geometry_partial_with_one_file_shows_only_its_block(kind: str):
    geo = geometry.context(json.loads(json.dumps({"large_batch": _large_batch()})))
    text = _section(kind, "geometry", geometry=geo)
    assert "Large-batch consistency" in text and "Gibbs" not in text
    assert "Modality gap" not in text and "F^Sym" not in text


def test_a_paragraph_keeps_its_own_inline_tags_in_markdown():
    """The Markdown page makes printed values inert, never the template's own <em>: GitHub renders
    it as emphasis."""
    s0 = annealing_s0.context({"s0": _s0_synthetic()})
    md = _section("md", "s0", s0=s0)
    assert "<em>step / half step</em>" in md and "&lt;em&gt;" not in md
