"""The pre-registered primary block: its runs, and every inconsistency named by its key."""

from __future__ import annotations

import copy

import pytest

from infonce_lab.params import parse_params
from infonce_lab.pipeline.study import dataset_runs


def test_the_primary_runs_are_its_losses_times_its_seeds_at_its_one_setting(raw):
    p = parse_params(raw)
    pr = p.primary
    ids = [r.id for r in p.primary_runs()]
    assert ids[0] == f"{pr.dataset}-{pr.backbone}-{pr.losses[0]}-{pr.schedule}-{pr.seeds[0]}"
    # each loss trains the seeds of the families that compare it (primary 16, secondary 8)
    compared = {fam: {n for c in cs for n in (c.treatment, c.reference)}
                for fam, _, cs in pr.families()}
    for lo in pr.losses:
        want = set().union(*(set(seeds) for fam, seeds, _ in pr.families()
                             if lo in compared[fam]))
        assert {r.seed for r in p.primary_runs() if r.loss == lo} == want
    assert len(set(ids)) == len(ids)
    assert not set(ids) & {r.id for r in p.grid_runs()}
    # evaluate takes both blocks, diagnose the grid only
    assert dataset_runs(p, pr.dataset) == p.runs()
    assert dataset_runs(p, pr.dataset, primary=False) == p.grid_runs()


def test_a_loss_in_both_families_trains_the_union_of_their_seeds(raw):
    raw["primary"]["secondary"] = {"seeds": [1, 2, 30],
                                   "comparisons": [{"treatment": "weince", "reference": "infonce_topm"}]}
    raw["primary"]["control"] = {"seeds": [], "comparisons": []}
    raw["primary"]["losses"] = ["infonce", "weince", "infonce_topm"]
    pr = parse_params(raw).primary
    assert pr.seeds_of("weince") == sorted(set(raw["primary"]["seeds"]) | {30})
    assert pr.seeds_of("infonce_topm") == [1, 2, 30]
    assert pr.seeds_of("infonce") == sorted(raw["primary"]["seeds"])


def test_no_seeds_leaves_the_block_out(raw):
    raw["primary"]["seeds"] = []
    assert parse_params(raw).primary_runs() == []


@pytest.mark.parametrize(("edit", "key"), [
    (lambda r: r["primary"].update(seeds=[1]), "primary.seeds"),
    (lambda r: r["primary"].update(seeds=[1, 1]), "primary.seeds"),
    (lambda r: r["primary"].update(losses=["infonce", "weince"]), "primary.losses"),
    (lambda r: r["primary"]["comparisons"].append({"treatment": "weince", "reference": "weince"}),
     "primary.comparisons[1].reference"),
    (lambda r: r["primary"]["secondary"].update(seeds=[1]), "primary.secondary.seeds"),
    (lambda r: r["primary"]["secondary"].update(comparisons=[]), "primary.secondary.comparisons"),
    (lambda r: r["primary"]["secondary"]["comparisons"][0].update(reference="weince_recipe"),
     "primary.secondary.comparisons[0].reference"),
    (lambda r: r["primary"].update(comparisons=[]), "primary.comparisons"),
    # the control family is checked as the others: its seeds, and no pair asked twice
    (lambda r: r["primary"]["control"].update(seeds=[3]), "primary.control.seeds"),
    (lambda r: r["primary"]["control"].update(comparisons=[
        {"treatment": "infonce", "reference": "weince"}]), "primary.control.comparisons[0]"),
    # one pair, one question: again, reversed, or in both families
    (lambda r: r["primary"]["comparisons"].append({"treatment": "weince", "reference": "infonce"}),
     "primary.comparisons[1]"),
    (lambda r: r["primary"]["comparisons"].append({"treatment": "infonce", "reference": "weince"}),
     "primary.comparisons[1]"),
    (lambda r: r["primary"]["secondary"].update(comparisons=[
        {"treatment": "weince_recipe", "reference": "infonce_topm"},
        {"treatment": "infonce", "reference": "weince"}]), "primary.secondary.comparisons[1]"),
    (lambda r: r["primary"]["secondary"].update(comparisons=[
        {"treatment": "weince_recipe", "reference": "infonce_topm"},
        {"treatment": "infonce_topm", "reference": "weince_recipe"}]),
     "primary.secondary.comparisons[1]"),
    (lambda r: r["primary"].update(dataset="mnist_5k"), "primary.dataset"),
    (lambda r: r["primary"].update(backbone="nope"), "primary.backbone"),
    (lambda r: r["primary"].update(schedule="nope"), "primary.schedule"),
    # weince (primary.losses[1]) is compared once; infonce also by the oracle's contrast
    (lambda r: (r["primary"]["losses"].__setitem__(1, "nope"),
                r["primary"]["comparisons"][0].update(treatment="nope")), "primary.losses[1]"),
    # its runs would also be grid runs: two stages writing one model
    (lambda r: r["primary"].update(schedule=r["study"]["schedules"][0]), "primary.schedule"),
    # no shared run, but shared configurations: both stages would replace one folder
    (lambda r: (r["primary"].update(schedule=r["study"]["schedules"][0], seeds=[11, 12]),
                r["primary"].update(losses=r["primary"]["losses"][:2],
                                    secondary={"seeds": [], "comparisons": []},
                                    control={"seeds": [], "comparisons": []})),
     "primary.schedule"),
    # the temperature check covers the primary block's pairs too
    (lambda r: r["primary"].update(schedule="learned"), "schedules.learned.kind"),
    (lambda r: r["primary"].update(metrics=["Few.x"]), "primary.metrics.0"),
])
def test_inconsistent_primary_blocks_name_their_key(raw, config_error, edit, key):
    broken = copy.deepcopy(raw)
    edit(broken)
    assert key in config_error(broken)


def test_primary_metrics_must_be_compared_metrics(raw, config_error):
    raw["primary"]["metrics"] = ["few.probe_test_acc", "geometry.alignment"]
    assert "primary.metrics.1 = 'geometry.alignment': expected one of" in config_error(raw)
    raw["primary"]["metrics"] = ["few.probe_test_acc"]
    parse_params(raw)


def test_a_secondary_family_of_one_seed_says_how_to_leave_the_family_out(raw, config_error):
    raw["primary"]["secondary"]["seeds"] = [1]
    msg = config_error(raw)
    assert "primary.secondary.seeds" in msg and "leave the secondary family out" in msg
    assert "primary.seeds: []" not in msg


def test_a_loss_name_holding_the_contrast_separator_is_refused(raw, config_error):
    raw["losses"]["infonce_vs_x"] = raw["losses"]["infonce"]
    raw["primary"]["losses"] = [*raw["primary"]["losses"], "infonce_vs_x"]
    raw["primary"]["secondary"]["comparisons"].append(
        {"treatment": "infonce_vs_x", "reference": "weince"})
    n = len(raw["primary"]["secondary"]["comparisons"]) - 1
    assert f"primary.secondary.comparisons[{n}]" in config_error(raw)


def test_the_control_family_is_its_own_holm_family(raw):
    pr = parse_params(raw).primary
    names = [name for name, _, _ in pr.families()]
    assert names == ["primary", "secondary", "control"]
    control = dict((n, (seeds, cs)) for n, seeds, cs in pr.families())["control"]
    assert [(c.treatment, c.reference) for c in control[1]] == [("infonce_oracle", "infonce")]
    assert pr.seeds_of("infonce_oracle") == control[0]
