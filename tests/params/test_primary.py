"""The pre-registered primary block: its runs, and every inconsistency named by its key."""

from __future__ import annotations

import copy

import pytest

from infonce_lab.params import parse_params
from infonce_lab.pipeline.study import check_primary_metrics, dataset_runs


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
    (lambda r: r["primary"].update(dataset="mnist_5k"), "primary.dataset"),
    (lambda r: r["primary"].update(backbone="nope"), "primary.backbone"),
    (lambda r: r["primary"].update(schedule="nope"), "primary.schedule"),
    (lambda r: (r["primary"]["losses"].__setitem__(0, "nope"),
                r["primary"]["comparisons"][0].update(reference="nope")), "primary.losses[0]"),
    # its runs would also be grid runs: two stages writing one model
    (lambda r: r["primary"].update(schedule=r["study"]["schedules"][0]), "primary.schedule"),
    # no shared run, but shared configurations: both stages would replace one folder
    (lambda r: (r["primary"].update(schedule=r["study"]["schedules"][0], seeds=[11, 12]),
                r["primary"].update(losses=r["primary"]["losses"][:2],
                                    secondary={"seeds": [], "comparisons": []})),
     "primary.schedule"),
    # the temperature check covers the primary block's pairs too
    (lambda r: r["primary"].update(schedule="learned"), "schedules.learned.kind"),
    (lambda r: r["primary"].update(metrics=["Few.x"]), "primary.metrics.0"),
])
def test_inconsistent_primary_blocks_name_their_key(raw, config_error, edit, key):
    broken = copy.deepcopy(raw)
    edit(broken)
    assert key in config_error(broken)


def test_primary_metrics_must_be_compared_metrics(raw):
    raw["primary"]["metrics"] = ["few.probe_test_acc", "geometry.alignment"]
    with pytest.raises(ValueError, match=r"primary\.metrics\[1\] = 'geometry.alignment'"):
        check_primary_metrics(parse_params(raw))
    raw["primary"]["metrics"] = ["few.probe_test_acc"]
    check_primary_metrics(parse_params(raw))
