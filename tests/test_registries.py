"""Every kind of the params schema has exactly one builder, and every builder a schema kind: a
kind added on one side only fails here, not in the middle of a study."""

from __future__ import annotations

import typing

import pytest

from infonce_lab.data.readers import READERS
from infonce_lab.models import BACKBONES
from infonce_lab.params import (
    BackboneConfig,
    LossConfig,
    ScheduleConfig,
    SimulationConfig,
    experiment_names,
)
from infonce_lab.params.data import DATASET_KINDS, DOWNLOADED_KINDS, ImageKind
from infonce_lab.pipeline.registry import LOSSES
from infonce_lab.pipeline.simulate import run_experiment
from infonce_lab.report.sections import sim_drawers


def _members(annotated: object) -> set[type]:
    union = typing.get_args(annotated)[0]  # Annotated[A | B | …, Field(discriminator=…)]
    return set(typing.get_args(union))


def test_every_loss_kind_has_a_builder_and_the_reverse():
    assert _members(LossConfig) == set(LOSSES)


@pytest.mark.parametrize("kind", sorted(_members(ScheduleConfig), key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_every_schedule_kind_builds_its_own_schedule(kind):
    """A schedule section builds its schedule itself (``build``, declared in its own class), and
    what it builds answers τ at every step."""
    assert "build" in vars(kind), f"{kind.__name__} has no build of its own"
    extra = {"kind": "linear_beta"} if kind.__name__ == "BetaGrowthSchedule" else {}
    tau = kind(**extra).build(10).tau(3)
    assert isinstance(tau, float)


def test_every_experiment_is_a_params_section_whose_runner_exists():
    from infonce_lab.simulation import runner

    names = experiment_names()
    assert set(names) == set(SimulationConfig.model_fields) - {"experiments"}
    assert SimulationConfig().experiments == list(names)  # the default runs every one
    for name in names:
        assert callable(runner(type(getattr(SimulationConfig(), name)).RUNS)), name
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        run_experiment("nope", SimulationConfig())
    with pytest.raises(ValueError, match="no module 'nope'"):
        runner("nope:run")
    with pytest.raises(ValueError, match="unknown experiment"):
        SimulationConfig(experiments=["s0", "nope"])


@pytest.mark.parametrize("name", experiment_names())
def test_every_runner_takes_its_section_as_required_keywords(name):
    """A knob's default lives in the schema only: the runner has a keyword for every field of its
    section, none with a default of its own."""
    import inspect

    from infonce_lab.simulation import runner

    section = getattr(SimulationConfig(), name)
    params = inspect.signature(runner(type(section).RUNS)).parameters
    for field in type(section).model_fields:
        assert params[field].kind is inspect.Parameter.KEYWORD_ONLY, (name, field)
        assert params[field].default is inspect.Parameter.empty, (name, field)


def test_every_experiment_has_its_figures_in_one_report_section():
    # sim_drawers() refuses an experiment whose figures two section modules declare
    assert set(sim_drawers()) <= set(experiment_names())
    # and every experiment's file is read by a declared section (its claims are on the page)
    from infonce_lab.report.sections import declared

    read = {r.removeprefix("sims.") for s in declared() for r in s.reads}
    assert set(experiment_names()) <= read


def test_every_backbone_kind_has_a_builder_and_the_reverse():
    assert _members(BackboneConfig) == set(BACKBONES)


def test_every_dataset_kind_has_a_reader_and_the_reverse():
    assert set(DATASET_KINDS) == set(READERS)
    assert set(typing.get_args(ImageKind)) | {"digits"} == set(READERS)
    # a kind the schema lets take a mirror's archives is one whose reader fetches the publisher's
    assert set(DOWNLOADED_KINDS) == {k for k, r in READERS.items() if r.archives}


def test_every_text_dataset_kind_has_a_reader_and_the_reverse():
    from infonce_lab.data.text import TEXT_READERS
    from infonce_lab.params import TextDatasetConfig

    kinds = {m.model_fields["kind"].default for m in _members(TextDatasetConfig)}
    assert kinds == set(TEXT_READERS)


def test_the_check_sees_a_missing_builder():
    missing = dict(LOSSES)
    missing.pop(next(iter(missing)))
    assert _members(LossConfig) != set(missing)


def test_every_registered_loss_builds_from_its_defaults_and_trains_one_step():
    import torch

    from infonce_lab.losses.objects import protocol_gaps
    from infonce_lab.pipeline.registry import build_loss

    g = torch.Generator().manual_seed(0)
    for config in LOSSES:
        loss_fn = build_loss(config())
        assert protocol_gaps(loss_fn) == [], config
        z1 = torch.randn(64, 8, generator=g, requires_grad=True)
        z2 = (z1.detach() + 0.1 * torch.randn(64, 8, generator=g)).requires_grad_()
        tau = 0.5 if config().kind != "siglip" else 1.0
        loss, stats = loss_fn(z1, z2, tau)
        assert loss.ndim == 0 and torch.isfinite(loss), config
        loss.backward()
        assert z1.grad is not None and torch.isfinite(z1.grad).all() and z1.grad.abs().sum() > 0
        assert all(isinstance(v, torch.Tensor) and not v.requires_grad for v in stats.values())
        state = loss_fn.state_dict()
        loss_fn.load_state_dict(state)  # its own state round-trips


def test_a_loss_that_breaks_the_protocol_fails_when_built_naming_its_kind(monkeypatch):
    from infonce_lab.params import InfoNCEConfig
    from infonce_lab.pipeline import registry

    def plain_function(z1, z2, tau):  # noqa: ANN001, ANN202 — what "a loss is a function" gives
        return (z1 - z2).pow(2).sum(), {}

    monkeypatch.setitem(registry.LOSSES, InfoNCEConfig, lambda c: plain_function)
    with pytest.raises(TypeError, match="loss kind 'info_nce'.*without candidates, state_dict"):
        registry.build_loss(InfoNCEConfig())


def test_the_schema_offers_exactly_the_choices_the_losses_take():
    """The choices a loss's math takes (its Literal types) and the schema's for the same knob
    are written in two layers (the math imports no params); they must be the same set."""
    from infonce_lab.losses.common import Candidates
    from infonce_lab.losses.weince import BetaMode, LambdaMode
    from infonce_lab.params import CandidateSet, DirectAUConfig, WeinceConfig

    def choices(annotation: object) -> set:
        return {a for a in typing.get_args(annotation) if a is not type(None)}

    assert choices(CandidateSet) == choices(Candidates)
    assert choices(WeinceConfig.model_fields["lambda_mode"].annotation) == choices(LambdaMode)
    assert choices(WeinceConfig.model_fields["beta"].annotation) == choices(BetaMode)
    drives = typing.get_args(DirectAUConfig.model_fields["schedule_drives"].annotation)
    assert {a for d in drives for a in typing.get_args(d)} == {"t"}
