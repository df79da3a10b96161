"""The whole params file: the study lists, the primary comparison, the report, the
cross-section checks, runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool, model_validator

import infonce_lab.evaluation.metrics as metrics
from infonce_lab.params.base import (
    MAX_RUN_STEPS,
    WORK,
    Name,
    OneLine,
    Seed,
    Strict,
    Unique,
    _KeyProblem,
)
from infonce_lab.params.data import DATASET_KINDS, DatasetConfig
from infonce_lab.params.evaluation import EvaluationConfig
from infonce_lab.params.models import BackboneConfig
from infonce_lab.params.objectives import (
    LossConfig,
    ScheduleConfig,
    schedule_range_problem,
)
from infonce_lab.params.simulation import SimulationConfig
from infonce_lab.params.tails import TailsConfig
from infonce_lab.params.text import TextConfig
from infonce_lab.params.training import StepCostConfig, TrainingConfig

Baseline = Literal["random_init", "raw_pixels"]


class StudyConfig(Strict):
    datasets: Annotated[list[Name], Field(min_length=1), Unique]
    backbones: Annotated[list[Name], Field(min_length=1), Unique]
    losses: Annotated[list[Name], Field(min_length=1), Unique]
    schedules: Annotated[list[Name], Field(min_length=1), Unique]
    seeds: Annotated[list[Seed], Field(min_length=1), Unique, WORK]
    baselines: Annotated[list[Baseline], Unique] = ["random_init", "raw_pixels"]


class Contrast(Strict):
    """``treatment − reference``, paired by seed."""

    treatment: Name
    reference: Name


class SecondaryFamily(Strict):
    """Pre-registered comparisons decided as their own Holm family, on their own seeds: in the
    same setting and on the same metrics as the primary family, never its headline. Where the
    budget cannot give every contrast the primary's seeds, the primary keeps its power."""

    seeds: Annotated[list[Seed], Unique, WORK] = []
    comparisons: list[Contrast] = []


def _compared_metric(name: str) -> str:
    allowed = metrics.names(compared=True)
    if name not in allowed:
        raise ValueError(f"expected one of {list(allowed)}")
    return name


class PrimaryConfig(Strict):
    """The pre-registered primary comparison: one setting, its own seeds, its own runs (a block
    beside the study's grid, never pooled with it), the metrics that decide it. ``seeds: []``
    leaves it out. ``losses`` is what dvc.yaml's matrix expands (DVC cannot derive it from the
    comparisons); it must list exactly the comparisons' losses, of both families. A loss trains
    the seeds of every family that compares it."""

    dataset: Name
    backbone: Name
    schedule: Name
    losses: Annotated[list[Name], Unique]
    seeds: Annotated[list[Seed], Unique, WORK]
    comparisons: list[Contrast]
    secondary: SecondaryFamily = SecondaryFamily()
    # Controls: contrasts that test an explanation of the result (e.g. a label oracle), no
    # paper's claim; their own Holm family, so they weaken neither family of claims.
    control: SecondaryFamily = SecondaryFamily()
    # Compared metrics of the declarations (evaluation/metrics.py): the aggregate stage's,
    # checked here so that a name it has no numbers for fails before hours of training.
    metrics: Annotated[list[Annotated[str, AfterValidator(_compared_metric)]],
                       Field(min_length=1), Unique]
    min_effect_points: Annotated[float, Field(gt=0.0)] = 1.0

    def families(self) -> list[tuple[str, list[int], list[Contrast]]]:
        """(name, seeds, contrasts) of each family that has contrasts: each is one Holm family."""
        if not self.seeds:
            return []
        out = [("primary", list(self.seeds), list(self.comparisons))]
        for name in ("secondary", "control"):
            fam: SecondaryFamily = getattr(self, name)
            if fam.comparisons:
                out.append((name, list(fam.seeds), list(fam.comparisons)))
        return out

    def _blocks(self) -> list[tuple[str, list[int], list[Contrast]]]:
        """Every family's block with its params key, contrasts or not."""
        return [("primary", list(self.seeds), list(self.comparisons)),
                *((f"primary.{n}", list(getattr(self, n).seeds), list(getattr(self, n).comparisons))
                  for n in ("secondary", "control"))]

    def seeds_of(self, loss: str) -> list[int]:
        """The seeds ``loss`` trains: the union over the families that compare it."""
        return sorted({s for _, seeds, contrasts in self.families() for s in seeds
                       if any(loss in (c.treatment, c.reference) for c in contrasts)})

    @model_validator(mode="after")
    def _consistent(self) -> PrimaryConfig:
        if not self.seeds:
            return self
        for key, fam_seeds, contrasts in self._blocks():
            if key != "primary" and not contrasts and not fam_seeds:
                continue
            if len(fam_seeds) < 2:
                leave_out = ("primary.seeds: [] to leave the primary comparison out"
                             if key == "primary" else
                             f"no {key} block to leave the {key.split('.')[1]} family out")
                raise _KeyProblem(f"{key}.seeds", fam_seeds,
                                  "≥ 2 seeds (a paired comparison over one seed has no "
                                  f"interval), or {leave_out}")
            if not contrasts:
                raise _KeyProblem(f"{key}.comparisons", [], "≥ 1 {treatment, reference} pair")
            for i, c in enumerate(contrasts):
                if c.treatment == c.reference:
                    raise _KeyProblem(f"{key}.comparisons[{i}].reference", c.reference,
                                      "a loss other than the treatment")
                for name in (c.treatment, c.reference):
                    # aggregate keys a contrast "<treatment>_vs_<reference>": a name holding
                    # "_vs_" could make two contrasts one key.
                    if "_vs_" in name:
                        raise _KeyProblem(f"{key}.comparisons[{i}]", name,
                                          "loss names without '_vs_' (it joins a contrast's key)")
        # One Holm family per question: a pair compared twice (again, reversed, or in both
        # families) would be counted twice in the multiplicity adjustment and share one key.
        seen: dict[frozenset[str], str] = {}
        for key, _, contrasts in self._blocks():
            for i, c in enumerate(contrasts):
                pair, where = frozenset((c.treatment, c.reference)), f"{key}.comparisons[{i}]"
                if pair in seen:
                    raise _KeyProblem(where, {"treatment": c.treatment, "reference": c.reference},
                                      f"a pair not compared already ({seen[pair]} compares "
                                      "the same two losses)")
                seen[pair] = where
        compared = [n for _, _, cs in self.families() for c in cs
                    for n in (c.treatment, c.reference)]
        if set(compared) != set(self.losses):
            raise _KeyProblem("primary.losses", self.losses,
                              f"exactly the comparisons' losses {sorted(set(compared))}")
        return self


class ReportConfig(Strict):
    title: OneLine = "InfoNCE Lab report"
    # The pipeline claim: trained encoders beat their own random initialisation by more than this.
    min_gain_over_random: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    # The data are synthetic (a rehearsal of the pipeline on made-up archives): the page says so
    # under its title and in every paper-scale row, and its numbers decide nothing.
    synthetic_data: StrictBool = False


class Params(Strict):
    study: StudyConfig
    primary: PrimaryConfig
    datasets: dict[Name, DatasetConfig]
    backbones: dict[Name, BackboneConfig]
    losses: dict[Name, LossConfig]
    schedules: dict[Name, ScheduleConfig]
    training: TrainingConfig = TrainingConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    tails: TailsConfig = TailsConfig()
    simulation: SimulationConfig = SimulationConfig()
    text: TextConfig = TextConfig()
    report: ReportConfig = ReportConfig()
    step_cost: StepCostConfig = StepCostConfig()

    @model_validator(mode="after")
    def _study_refers_to_known_names(self) -> Params:
        for section in ("datasets", "backbones", "losses", "schedules"):
            known = getattr(self, section)
            for i, name in enumerate(getattr(self.study, section)):
                if name not in known:
                    raise _KeyProblem(
                        f"study.{section}[{i}]",
                        name,
                        f"a name defined under '{section}:' ({', '.join(sorted(known)) or 'none'})",
                    )
        text = self.text.study
        for section, known in (("datasets", self.text.datasets), ("encoders", self.text.encoders),
                               ("losses", self.losses), ("schedules", self.schedules)):
            where = f"text.{section}" if section in ("datasets", "encoders") else section
            for i, name in enumerate(getattr(text, section)):
                if name not in known:
                    raise _KeyProblem(
                        f"text.study.{section}[{i}]", name,
                        f"a name defined under '{where}:' ({', '.join(sorted(known)) or 'none'})",
                    )
        tails = self.text.tails
        for i, name in enumerate(tails.encoders):
            if name not in self.text.encoders:
                raise _KeyProblem(f"text.tails.encoders[{i}]", name,
                                  "a name defined under 'text.encoders:'")
        if tails.encoders:  # the text bank is fitted with tails:'s sizes too
            self.tails.check_bank(tails.batches, tails.batch_size, "text.tails")
        if self.text.training.eval_every_steps:
            for name in text.datasets:
                if self.text.datasets[name].kind == "gensim":
                    raise _KeyProblem(
                        "text.training.eval_every_steps", self.text.training.eval_every_steps,
                        f"0: text.datasets.{name} (gensim) has no validation set",
                    )
        if self.text.training.selection == "best_val":
            for name in text.datasets:
                if self.text.datasets[name].kind == "gensim":
                    raise _KeyProblem(
                        "text.training.selection", "best_val",
                        f"'final': text.datasets.{name} (gensim) has no validation set to select "
                        "on — its Lee similarity pairs are the test set",
                    )
        pairs = [(lo, sc) for lo in self.study.losses for sc in self.study.schedules]
        pairs += [(lo, sc) for lo in text.losses for sc in text.schedules]
        pairs += self._check_primary()
        self._check_step_cost()
        self._check_schedules_over_runs()
        self._check_splits()
        for loss, sched in pairs:
            takes = self.losses[loss].takes_temperature
            gives = self.schedules[sched].kind != "none"
            if takes and not gives:
                raise _KeyProblem(
                    f"schedules.{sched}.kind", "none",
                    f"a temperature schedule: the study pairs it with losses.{loss} "
                    f"({self.losses[loss].kind}), which needs a temperature",
                )
            knob = self.losses[loss].temperature_knob
            if gives and not takes and knob is None:
                raise _KeyProblem(
                    f"schedules.{sched}.kind", self.schedules[sched].kind,
                    f"'none': the study pairs it with losses.{loss} ({self.losses[loss].kind}), "
                    "which learns its own temperature",
                )
            if gives and not takes:
                raise _KeyProblem(
                    f"losses.{loss}.{knob[0]}", None,
                    f"{knob[1]!r} (let the schedule drive {knob[2]}): the study pairs this "
                    f"{self.losses[loss].kind} loss, which has no temperature, with "
                    f"schedules.{sched} ({self.schedules[sched].kind}); or use a schedule of "
                    "kind 'none'",
                )
        return self

    def _check_splits(self) -> None:
        """The sizes the evaluation and training need from each dataset's splits, against the
        dataset's published facts: the rarest class keeps a validation item and enough probe
        training items for the few-label draws (the evaluate stage checks the same on the labels
        it reads), and a batch fits in the training images."""
        ev = self.evaluation
        for name in dict.fromkeys(run.dataset for run in self.runs()):
            ds = self.datasets[name]
            facts = DATASET_KINDS[ds.kind]
            images = facts.pretrain_images_at_most(getattr(ds, "with_unlabeled", False))
            if self.training.batch_size > images:
                raise _KeyProblem("training.batch_size", self.training.batch_size,
                                  f"at most the training images of datasets.{name} ({images})")
            n = facts.smallest_labelled_class(getattr(ds, "test_fraction", 0.0))
            val = math.floor(ev.val_fraction * n)
            if val == 0:
                raise _KeyProblem("evaluation.val_fraction", ev.val_fraction,
                                  f"at least 1/{n}: the rarest class of datasets.{name} has {n} "
                                  "train images and would have no validation item")
            if ev.few_labels.per_class > n - val:
                raise _KeyProblem("evaluation.few_labels.per_class", ev.few_labels.per_class,
                                  f"at most {n - val}: the rarest class of datasets.{name} keeps "
                                  f"{n - val} images for the probe's training split")

    def _check_schedules_over_runs(self) -> None:
        """τ at every step of every run a schedule drives, inside [TAU_MIN, TAU_MAX] (the range
        of a ``Temperature``): a log schedule whose β overflows to τ = 0 on a long run, or a
        β0 so small that τ starts astronomically large, is refused here, not steps into training.
        An image run is checked over epochs × ⌊images/batch⌋ steps with the dataset's published
        split sizes, an upper bound (the split a run reads is known only once it is read); a text
        run over ``text.training.max_steps`` when set, else by the text stage once its corpus is
        read (``pipeline.text_pretrain.text_pretrain``)."""
        runs: set[tuple[str, int, int, str]] = set()
        t = self.training
        for run in self.runs():
            ds = self.datasets[run.dataset]
            images = DATASET_KINDS[ds.kind].pretrain_images_at_most(
                getattr(ds, "with_unlabeled", False))
            spe = max(1, images // t.batch_size)
            if t.epochs * spe > MAX_RUN_STEPS:
                raise _KeyProblem("training.epochs", t.epochs, (
                    f"at most {MAX_RUN_STEPS // spe:,} at up to {spe:,} steps per epoch "
                    f"(datasets.{run.dataset} at training.batch_size {t.batch_size}): runs of at "
                    f"most {MAX_RUN_STEPS:,} steps, every step's τ and learning rate computed "
                    "before the first"))
            runs.add((run.schedule, spe, t.epochs * spe, f"datasets.{run.dataset}"))
        if self.text.training.max_steps is not None:
            runs |= {(sc, 1, self.text.training.max_steps, "text.training.max_steps")
                     for sc in self.text.study.schedules}
        for name, spe, total, where in sorted(runs):
            problem = schedule_range_problem(self.schedules[name], spe, total)
            if problem:
                raise _KeyProblem(f"schedules.{name}", self.schedules[name].kind,
                                  f"{problem} (a run of {total} steps, {where})")

    def _check_step_cost(self) -> None:
        sc = self.step_cost
        if sc.backbone not in self.backbones:
            raise _KeyProblem("step_cost.backbone", sc.backbone,
                              f"a name defined under 'backbones:' ({', '.join(sorted(self.backbones))})")
        for key in ("reference", "treatment"):
            name = getattr(sc, key)
            if name not in self.losses:
                raise _KeyProblem(f"step_cost.{key}", name,
                                  f"a name defined under 'losses:' ({', '.join(sorted(self.losses))})")
            if self.losses[name].needs_labels:
                # the timing feeds random tensors: there are no labels to hand the loss
                raise _KeyProblem(f"step_cost.{key}", name,
                                  "a loss that reads no class labels (the timing runs on random "
                                  f"tensors); losses.{name} sets mask_same_class")
        if sc.reference == sc.treatment:
            raise _KeyProblem("step_cost.treatment", sc.treatment,
                              f"a loss other than step_cost.reference ({sc.reference})")

    def _check_primary(self) -> list[tuple[str, str]]:
        """The primary block's names are defined, its dataset is downloaded and evaluated (in
        study.datasets), and none of its configurations is also a grid configuration (two stages
        would write one folder). Returns its (loss, schedule) pairs for the temperature check."""
        pr = self.primary
        if not pr.seeds:
            return []
        if pr.dataset not in self.study.datasets:
            raise _KeyProblem("primary.dataset", pr.dataset,
                              f"one of study.datasets {self.study.datasets} (the download and "
                              "evaluate stages run per study dataset)")
        for key, name, section in (("backbone", pr.backbone, "backbones"),
                                   ("schedule", pr.schedule, "schedules")):
            if name not in getattr(self, section):
                raise _KeyProblem(f"primary.{key}", name, f"a name defined under '{section}:'")
        for i, name in enumerate(pr.losses):
            if name not in self.losses:
                raise _KeyProblem(f"primary.losses[{i}]", name, "a name defined under 'losses:'")
        for i, name in enumerate(self.tails.primary_losses):
            if name not in pr.losses:
                raise _KeyProblem(f"tails.primary_losses[{i}]", name,
                                  f"one of the primary block's losses {pr.losses}")
        shared = sorted({c.to_str() for c in configurations(self.grid_runs())}
                        & {c.to_str() for c in configurations(self.primary_runs())})
        if shared:
            raise _KeyProblem("primary.schedule", pr.schedule,
                              f"a schedule whose configurations are not also grid "
                              f"configurations of study: (shared: {', '.join(shared[:3])}"
                              f"{', …' if len(shared) > 3 else ''}); the primary block has its "
                              "own runs, and one stage trains every seed of a configuration")
        return [(lo, pr.schedule) for lo in pr.losses]

    # ----------------------------------------------------------------- run bookkeeping
    def text_runs(self) -> list[TextRun]:
        """Every run of the text study, in the order dvc.yaml's text matrix expands them."""
        s = self.text.study
        return [
            TextRun(dataset=d, encoder=e, loss=lo, schedule=sc, seed=seed)
            for d in s.datasets
            for e in s.encoders
            for lo in s.losses
            for sc in s.schedules
            for seed in s.seeds
        ]

    def grid_runs(self) -> list[Run]:
        """The study's grid (``study:``), in the order dvc.yaml's pretrain matrix expands it."""
        s = self.study
        return [
            Run(dataset=d, backbone=b, loss=lo, schedule=sc, seed=seed)
            for d in s.datasets
            for b in s.backbones
            for lo in s.losses
            for sc in s.schedules
            for seed in s.seeds
        ]

    def primary_runs(self) -> list[Run]:
        """The primary block's runs, in the order dvc.yaml's pretrain_primary matrix expands them."""
        p = self.primary
        return [Run(dataset=p.dataset, backbone=p.backbone, loss=lo, schedule=p.schedule, seed=seed)
                for lo in p.losses for seed in p.seeds_of(lo)]

    def runs(self) -> list[Run]:
        """Every image run: the grid, then the primary block."""
        return self.grid_runs() + self.primary_runs()

    def stage_names(self) -> list[str]:
        """DVC's names of the stage instances these params define, in dvc.yaml's order: what the
        work estimates cover, and which timing files the report reads (files of removed runs
        stay out). The report stage times nothing itself."""
        s, t = self.study, self.text.study
        return (["check_params"] + [f"download@{d}" for d in s.datasets]
                + [f"pretrain@{c.to_str()}" for c in configurations(self.grid_runs())]
                + [f"pretrain_primary@{c.to_str()}" for c in configurations(self.primary_runs())]
                + [f"evaluate@{d}" for d in s.datasets]
                + [f"diagnose@{d}" for d in s.datasets] + ["noise_floor"]
                + [f"download_text@{d}" for d in t.datasets]
                + [f"tokenize_text@{d}-{e}" for d in t.datasets for e in t.encoders]
                + [f"text_pretrain@{c.to_str()}" for c in configurations(self.text_runs())]
                + [f"text_evaluate@{d}" for d in t.datasets]
                + [f"simulate@{e}" for e in self.simulation.experiments]
                + ["step_cost", "aggregate"])

    def diagnosed_runs(self) -> list[Run]:
        """The runs the diagnose stage diagnoses: the grid, then the primary block's runs of
        ``tails.primary_losses``."""
        wanted = set(self.tails.primary_losses)
        return self.grid_runs() + [r for r in self.primary_runs() if r.loss in wanted]


@dataclass(frozen=True)
class Configuration:
    """A configuration: a run without its seed — what the summary groups seeds by. Names cannot
    hold ``-`` (NAME_PATTERN), so the id parses back without ambiguity."""

    dataset: str
    model: str  # the backbone (images) or the encoder (text)
    loss: str
    schedule: str

    def to_str(self) -> str:
        return "-".join((self.dataset, self.model, self.loss, self.schedule))

    @classmethod
    def parse(cls, text: str) -> Configuration:
        parts = text.split("-")
        if len(parts) != 4:
            raise ValueError(f"{text!r} is not a configuration id (dataset-model-loss-schedule)")
        return cls(*parts)


@dataclass(frozen=True)
class RunId:
    """A run's id: its configuration and seed, identical to the suffix DVC gives the matrix stage
    (``pretrain@<id>``)."""

    config: Configuration
    seed: int

    def to_str(self) -> str:
        return f"{self.config.to_str()}-{self.seed}"

    @classmethod
    def parse(cls, text: str) -> RunId:
        head, _, seed = text.rpartition("-")
        if not seed.isdigit():
            raise ValueError(f"{text!r} is not a run id (dataset-model-loss-schedule-seed)")
        return cls(Configuration.parse(head), int(seed))


def configurations(runs: Sequence[_Identified]) -> list[Configuration]:
    """The runs' configurations, each once, in the runs' order: one pretrain stage instance
    trains every seed of a configuration (dvc.yaml's matrices have no seed axis)."""
    return list(dict.fromkeys(r.config for r in runs))


class _Identified:
    """The id of a run schema (its fields: dataset, a model, loss, schedule, seed). No annotations
    here: pydantic would take them for fields, ahead of the model's own order."""

    def _model(self) -> str:
        raise NotImplementedError

    @property
    def run_id(self) -> RunId:
        d = self.__dict__
        return RunId(Configuration(d["dataset"], self._model(), d["loss"], d["schedule"]),
                     d["seed"])

    @property
    def id(self) -> str:
        return self.run_id.to_str()

    @property
    def config(self) -> Configuration:
        return self.run_id.config


class Run(Strict, _Identified):
    """One image encoder: dataset × backbone × loss × schedule × seed."""

    dataset: Name
    backbone: Name
    loss: Name
    schedule: Name
    seed: int

    def _model(self) -> str:
        return self.backbone


class TextRun(Strict, _Identified):
    """One text encoder: dataset × encoder × loss × schedule × seed."""

    dataset: Name
    encoder: Name
    loss: Name
    schedule: Name
    seed: int

    def _model(self) -> str:
        return self.encoder

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["Baseline", "Configuration", "Contrast", "Params", "PrimaryConfig", "ReportConfig",
    "Run", "RunId", "SecondaryFamily", "StudyConfig", "TextRun", "configurations"]
