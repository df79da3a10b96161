"""The §4 row of the annealing section (mini-batch SGD's own noise as the SDE's): its rule passes
data that must pass it and fails data that must fail it (FIXTURES, checked by
tests/test_rules.py), abstains where it must (no reference, a control that escapes, a step that
matters), and the row built from a toy run of the simulation, through its results file, decides
as it must — both ways."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from infonce_lab.params import SgdNoiseConfig
from infonce_lab.report.render import environment
from infonce_lab.report.sections import annealing_sgd as sec
from infonce_lab.report.verdicts import Outcome
from infonce_lab.simulation.s1 import proportion, proportion_difference
from infonce_lab.simulation.sgd_noise import run_sgd_noise

N = 1000
RES = ("step", "half_step")


def _ends(sgd: tuple[int, int], sde: tuple[int, int] = (0, 0),
          gd: tuple[int, int] = (N, N)) -> dict[str, Any]:
    """The rule's input: trapped counts at T (step, half step) per variant, as the runner writes
    them (Wilson per variant, Newcombe for SGD − SDE)."""
    k = {"sgd": sgd, "sde": sde, "gd": gd}
    return {"p_trap_end": {v: {r: proportion(k[v][i], N) for i, r in enumerate(RES)} for v in k},
            "sgd_minus_sde": {r: proportion_difference(sgd[i], N, sde[i], N)
                              for i, r in enumerate(RES)}}


# (passing input, failing input): SGD escaping with the SDE; SGD keeping every chain (what its
# step-sized noise, ~1/20 of the SDE's temperature at the trap, gives)
FIXTURES = {"sgd_plays_sde_noise": (_ends((0, 1)), _ends((N, N)))}


def test_the_rule_fails_both_ways_and_abstains_where_it_must():
    rule = sec.RULES["sgd_plays_sde_noise"]
    assert rule.decide(_ends((3, 2))).outcome is Outcome.REPRODUCED
    assert rule.decide(_ends((400, 380))).outcome is Outcome.NOT_REPRODUCED
    # an interval across 0.1: neither
    v = rule.decide(_ends((100, 98)))
    assert v.outcome is Outcome.INCONCLUSIVE and "interval" in v.why
    # no reference: the SDE does not escape at this schedule — SGD trapped decides nothing
    v = rule.decide(_ends((N, N), sde=(300, 310)))
    assert v.outcome is Outcome.INCONCLUSIVE and "SDE reference" in v.why
    v = rule.decide(_ends((0, 0), sde=(300, 310)))
    assert v.outcome is Outcome.INCONCLUSIVE and "SDE reference" in v.why
    # the noiseless control escapes too: a pass would not be the noise's
    v = rule.decide(_ends((0, 0), gd=(0, 0)))
    assert v.outcome is Outcome.INCONCLUSIVE and "control" in v.why
    # ... but it does not rescue a failure
    assert rule.decide(_ends((N, N), gd=(0, 0))).outcome is Outcome.NOT_REPRODUCED
    # escapes, but clearly less than the SDE (0.08 against 0): beyond the margin
    v = rule.decide(_ends((80, 80)))
    assert v.outcome is Outcome.INCONCLUSIVE and "+0.05" in v.why
    # the step matters: escapes at the step, trapped at half of it
    v = rule.decide(_ends((0, N)))
    assert v.outcome is Outcome.INCONCLUSIVE and "not converged" in v.why


def test_the_margins_are_the_rules():
    text = sec.RULES["sgd_plays_sde_noise"].text
    assert f"below {sec.ESCAPED:g}" in text and f"above {sec.ESCAPED:g}" in text
    assert f"+{sec.MARGIN:g}" in text and "half the step" in text


def test_no_file_is_not_run():
    (row,) = sec.claim_rows({})
    assert row.verdict.outcome is Outcome.NOT_RUN
    assert "simulate@sgd_noise" in row.verdict.why


# the schema's defaults shrunk to a toy (T = 20: S1's P2 SDE at c/c* = ½ keeps none of 200
# chains from t = 10 on; 100 chains: 0 − 0 has a Newcombe interval inside the ±0.05 margin); a
# couple of seconds on one core
_TOY = SgdNoiseConfig(chains=100, horizon=20.0, first_check=1.0).model_dump()
_N = _TOY["chains"]


def test_the_row_from_a_toy_run_through_its_results_file_fails_and_its_swap_passes(tmp_path: Path):
    """run_sgd_noise at a toy size, written as the stage writes it and read back into the row:
    SGD keeps every chain while the SDE escapes — not reproduced; the same file with SGD's and
    the SDE's counts swapped (SGD escaping as the SDE does) is reproduced."""
    res = run_sgd_noise(**_TOY)
    path = tmp_path / "sgd_noise.json"
    path.write_text(json.dumps({"experiment": "sgd_noise", "params": _TOY, **res}))
    sims = {"sgd_noise": json.loads(path.read_text())}
    (row,) = sec.claim_rows(sims)
    assert row.verdict.outcome is Outcome.NOT_REPRODUCED, (row.result, str(row.verdict))
    assert row.rule == sec.RULES["sgd_plays_sde_noise"].text
    assert "T = 20" in row.quantity and "100 chains" in row.quantity and "1 of the 4" in row.quantity
    assert row.result.startswith("SGD (own noise): 1.000")
    assert "rank 2" in row.note and "breathing" in row.note and "η*" in row.note

    swapped = copy.deepcopy(sims)
    s = swapped["sgd_noise"]
    ends = s["p_trap_end"]
    ends["sgd"], ends["sde"] = ends["sde"], ends["sgd"]
    s["sgd_minus_sde"] = {r: proportion_difference(ends["sgd"][r]["k"], _N, ends["sde"][r]["k"], _N)
                          for r in RES}
    # the reference gone with it: SGD passes only where the (swapped) SDE escapes
    (row,) = sec.claim_rows(swapped)
    assert row.verdict.outcome is Outcome.INCONCLUSIVE and "SDE reference" in row.verdict.why
    s["p_trap_end"]["sde"] = copy.deepcopy(s["p_trap_end"]["sgd"])
    s["sgd_minus_sde"] = {r: proportion_difference(ends["sgd"][r]["k"], _N, ends["sde"][r]["k"], _N)
                          for r in RES}
    (row,) = sec.claim_rows(swapped)
    assert row.verdict.outcome is Outcome.REPRODUCED, (row.result, str(row.verdict))


def test_context_template_and_figure_from_a_toy_run():
    res = json.loads(json.dumps(run_sgd_noise(**{**_TOY, "horizon": 2.0, "chains": 12})))
    ctx = sec.context({"sgd_noise": res})
    assert ctx is not None and len(ctx["table"]) == 6
    assert all(len(r["p_trap"]) == len(ctx["times"]) for r in ctx["table"])
    assert sec.context({}) is None
    for markdown in (False, True):
        env = environment(markdown=markdown)
        text = env.get_template("sections/sgd.j2").render(
            sgd=ctx, figures={"sim_sgd_noise": "QUJD"}, fmt="md" if markdown else "html", up="")
        assert "SGD (own noise)" in text and "η matching the SDE" in text
        assert "Trapped share under SGD" in text
        assert ("figures/sim_sgd_noise.png" if markdown else "base64,QUJD") in text
    assert sec.sgd_trap_curves(res)[:8] == b"\x89PNG\r\n\x1a\n"
