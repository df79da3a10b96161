"""The simulation experiments, declared once: each is a field of :class:`SimulationConfig` whose
type (an :class:`ExperimentConfig`) names the simulation function that runs it (``RUNS``); the
experiment names, the default list, the DVC stage instances and the simulate stage's dispatch
all derive from those fields."""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, StrictBool, field_validator, model_validator

from infonce_lab.params.base import (
    WORK,
    NonNegFloat,
    PosFloat,
    PosInt,
    Seed,
    Strict,
    Unique,
    _KeyProblem,
)

Dynamics = Literal["P1", "P2"]


class ExperimentConfig(Strict):
    """One simulation experiment's params. ``RUNS``: "<module>:<function>" of
    :mod:`infonce_lab.simulation` that runs it on these fields as keyword arguments and returns
    its JSON-ready result (one file, reports/sims/<experiment>.json)."""

    RUNS: ClassVar[str]


class S0ScheduleConfig(Strict):
    """The fast schedules of S0 (annealing paper §6, App. A.2): β = β0 + r·√t, β0 + r·t, β0·r^t
    (capped at beta_max) and cosine-τ from 1/β0 to τ_min over each horizon T_c, held there after;
    β0 = c*."""

    sqrt_rate: PosFloat = 1.0
    linear_rate: PosFloat = 0.5
    geometric_rate: Annotated[float, Field(gt=1.0)] = 1.5
    beta_max: PosFloat = 100.0
    cosine_tau_min: PosFloat = 0.01
    cosine_horizons: list[PosFloat] = [100.0, 1000.0]


class _TimeAverage(Strict):
    chains: Annotated[int, Field(ge=4, multiple_of=2), WORK] = 512
    horizon: PosFloat = 1000.0
    burn_in: NonNegFloat = 100.0

    @model_validator(mode="after")
    def _burn_in_inside(self) -> _TimeAverage:
        if self.burn_in >= self.horizon:
            raise ValueError(f"burn_in = {self.burn_in}: expected below horizon ({self.horizon})")
        return self


class S0ErgodicityConfig(_TimeAverage):
    """Paper §3.1: at fixed β, time averages from both wells against the Gibbs mass of each
    dynamics' stationary law (P2: exp(−β·U); P1: exp(−β²·U))."""

    p2_beta: PosFloat = 2.25
    p1_beta: PosFloat = 1.5


class S0SgdConfig(_TimeAverage):
    """Paper §4: SGD with injected noise (P1 update, gradient error s·N(0, 1)) at η, η/2, η/4."""

    chains: Annotated[int, Field(ge=4, multiple_of=2), WORK] = 2048
    horizon: PosFloat = 600.0
    beta: PosFloat = 1.5
    eta: PosFloat = 0.05
    grad_noise_sd: NonNegFloat = 1.3


class S0ArrheniusConfig(Strict):
    """App. B.4: escape rates out of the trap at fixed β against Kramers–Arrhenius exp(−β·ΔE)."""

    betas: Annotated[list[PosFloat], Field(min_length=2)] = [2.0, 3.0, 4.0]
    chains: Annotated[int, Field(ge=10), WORK] = 256
    horizon: PosFloat = 400.0
    transient: NonNegFloat = 1.0


class S0Config(ExperimentConfig):
    """S0, our test of the annealing paper's §3–4 (it has no experiments): the double well on S¹
    with a closed-form barrier, annealed (P2 by default), every verdict quantity at dt and dt/2;
    fixed-β ergodicity and SGD against the SDE."""

    RUNS = "s0:run_s0"

    a: Annotated[float, Field(gt=0.0, lt=4.0)] = 0.5
    chains: Annotated[int, Field(ge=10), WORK] = 400
    dt: PosFloat = 0.05
    horizon: PosFloat = 10_000.0
    K: Annotated[float, Field(gt=1.0)] = math.e
    c_ratios: Annotated[list[PosFloat], Field(min_length=1)] = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0]
    fast: StrictBool = True  # also the sqrt, linear, geometric and cosine-τ schedules
    schedule: S0ScheduleConfig = S0ScheduleConfig()
    dynamics: Dynamics = "P2"
    check_dt: PosFloat = 0.5
    freeze_crossings: PosFloat = 0.1
    hazard_min_barrier: NonNegFloat = 3.0
    hazard_min_events: PosInt = 5
    hazard_bins: Annotated[int, Field(ge=3)] = 12
    angle_sd: NonNegFloat = 0.05
    bootstrap: Annotated[int, Field(ge=100), WORK] = 2000
    curve_points: Annotated[int, Field(ge=2)] = 120
    precision: Literal["float32", "float64"] = "float32"
    scheme: Literal["lm", "em"] = "lm"
    ergodicity: S0ErgodicityConfig = S0ErgodicityConfig()
    arrhenius: S0ArrheniusConfig = S0ArrheniusConfig()
    sgd: S0SgdConfig = S0SgdConfig()
    workers: Annotated[int, Field(ge=1, le=2)] = 2
    seed: Seed = 0


class S1Config(ExperimentConfig):
    """S1, our test of the annealing paper's §3.2: InfoNCE on (S¹)^4 with two positive pairs,
    started in the interleaved trap.

    Each setting runs at dt_k = min(dt_max, h/(κ_s²β_k^p)) (p = 2 for P1, 1 for P2: the drift's
    stiffness at the trap) and again at half of it; see ``simulation/s1.py``."""

    RUNS = "s1:run_s1"

    kappa_s: PosFloat = 1.0
    grid: Annotated[int, Field(ge=16, multiple_of=4)] = 128
    beta_bar: PosFloat = 20.0
    chains: Annotated[int, Field(ge=10), WORK] = 200
    dt_max: PosFloat = 1e-2
    h_p1: PosFloat = 0.5
    h_p2: PosFloat = 0.4
    horizon: PosFloat = 100.0
    horizon_p1: PosFloat = 100.0
    # P1 runs unheld to at least hold_after; from a check on, it is held once the bound on its
    # remaining barrier crossings (simulation/s1.py: p1_crossings_bound) is below hold_crossings
    hold_after: PosFloat = 5.0
    hold_crossings: PosFloat = 0.1
    first_check: PosFloat = 0.1
    c_ratios: Annotated[list[PosFloat], Field(min_length=1)] = [0.5, 1.0, 2.0]
    # the √t schedule starts at, and stays at or above over [0, horizon], the log schedule with
    # this c/c*: Prop. 3.3's regime (c′ > c*) reached within the run
    sqrt_outruns: Annotated[float, Field(gt=1.0)] = 2.0
    dynamics: Annotated[list[Dynamics], Field(min_length=1)] = ["P2", "P1"]
    angle_sd: NonNegFloat = 0.05
    seed: Seed = 0

    @model_validator(mode="after")
    def _horizons(self) -> S1Config:
        if self.hold_after > self.horizon_p1:
            raise ValueError(f"hold_after ({self.hold_after}) must not exceed horizon_p1 "
                             f"({self.horizon_p1})")
        if self.first_check > min(self.horizon, self.horizon_p1):
            raise ValueError("first_check must not exceed horizon or horizon_p1")
        return self


class HessianConfig(ExperimentConfig):
    """Annealing paper §5, App. C.3: the Riemannian Hessian formula vs finite differences (and at
    half the FD step); log‖H‖ vs log β, asymptotically."""

    RUNS = "hessian:run_hessian"

    n_random: Annotated[PosInt, WORK] = 100
    betas: Annotated[list[PosFloat], Field(min_length=2)] = [1, 2, 5, 10, 20, 50, 100, 200]
    seed: Seed = 0
    margin_factor: PosFloat = 30.0
    beta_cap: PosFloat = 1e4


class PropC2Config(ExperimentConfig):
    """Annealing paper Prop. C.2 against minimizers quenched from random starts on S1's (S¹)^4 and
    on (S²)^6, and the measure of the minimizer set among uniform configurations."""

    RUNS = "minimizers:run_prop_c2"
    starts: Annotated[PosInt, WORK] = 200
    uniform: Annotated[PosInt, WORK] = 20_000
    seed: Seed = 0


class NegativesConfig(ExperimentConfig):
    """Annealing paper App. A.2: the interleaved trap's escape barrier against the number of
    negatives, along minimum-energy paths of F_β̄ at β̄ and 2β̄."""

    RUNS = "negatives:run_negatives"
    n_pairs: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=2)] = [2, 3, 4]
    beta_bar: PosFloat = 50.0
    seed: Seed = 0


class LargeBatchConfig(ExperimentConfig):
    """Wang–Isola's Theorem 1 and the geometry paper's Thm 3.1 (large-batch gradient and value
    gaps)."""

    RUNS = "large_batch:run_large_batch"

    grad_seeds: Annotated[int, Field(ge=2), WORK] = 20
    value_seeds: Annotated[int, Field(ge=2), WORK] = 20
    wi_taus: Annotated[list[PosFloat], Field(min_length=1)] = [0.5, 0.2]
    wi_replicates: Annotated[int, Field(ge=2), WORK] = 10


class GibbsConfig(ExperimentConfig):
    """The geometry paper's Gibbs experiment: particles trained on the free energy vs the Gibbs
    law on S², at ``steps`` and at twice the steps."""

    RUNS = "population:run_gibbs"

    taus: Annotated[list[PosFloat], Field(min_length=2)] = [10, 5, 2.5, 1, 0.5, 0.2, 0.1]
    bandwidth: PosFloat = 0.35
    extra_bandwidths: list[PosFloat] = [0.1]
    extra_taus: list[PosFloat] = [0.1]
    seeds: Annotated[int, Field(ge=2), WORK] = 8
    particles: Annotated[int, Field(ge=8), WORK] = 128
    bandwidth_seeds: Annotated[int, Field(ge=2), WORK] = 4
    bandwidth_particles: Annotated[int, Field(ge=8), WORK] = 256
    steps: Annotated[PosInt, WORK] = 700
    n_gibbs: Annotated[int, Field(ge=1000), WORK] = 120_000
    radius: PosFloat = 0.5
    seed: Seed = 0

    @model_validator(mode="after")
    def _coldest_tau_rerun(self) -> GibbsConfig:
        # the bandwidth explanation is tested where the published curve parts: the lowest τ
        if self.extra_bandwidths and min(self.taus) not in self.extra_taus:
            raise ValueError(f"extra_taus {self.extra_taus} must contain the lowest of taus "
                             f"({min(self.taus)}): the smaller bandwidths are run where the "
                             "published bandwidth parts from the Gibbs law")
        return self


class LiftedEnergyConfig(ExperimentConfig):
    """The geometry paper's multimodal result: the symmetric InfoNCE's large-batch limit against
    the lifted energy F^Sym on S¹ (two von Mises-mixture marginals), Monte Carlo against
    quadrature."""

    RUNS = "lifted_energy:run_lifted_energy"

    kappa: PosFloat = 6.0
    weight: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.7
    shift: float = 0.6
    sigma: NonNegFloat = 0.3
    taus: Annotated[list[Annotated[float, Field(ge=0.025)]], Field(min_length=1)] = [0.2, 0.1, 0.05]
    quadrature_taus: Annotated[list[PosFloat], Field(min_length=2)] = [0.5, 0.2, 0.1, 0.05, 0.02, 0.01]
    ns: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=2)] = [256, 1024, 4096]
    replicates: Annotated[int, Field(ge=2), WORK] = 8
    grid: Annotated[int, Field(ge=256)] = 8192
    seed: Seed = 0


class ModalityGapConfig(ExperimentConfig):
    """The geometry paper's modality-gap experiment: symmetric InfoNCE with two linear encoders
    on S¹, its identity and one-directional controls; D_sym vs σ_mis, decided at ``steps`` and
    checked at half of them (one run, read twice). The batch/negatives arm: at ``arm_sigma``,
    the same seeds again at each batch size of ``arm_batches`` and with hard negatives
    (Robinson et al. 2021) at ``arm_beta_hard``, against ``arm_gap_share`` of the experiment's
    own excess gap."""

    RUNS = "population:run_modality_gap"

    sigmas: Annotated[list[NonNegFloat], Field(min_length=2)] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    seeds: Annotated[int, Field(ge=4), WORK] = 20
    # the verdicts' step; the convergence check reads the same run at steps/2
    steps: Annotated[int, Field(ge=2, multiple_of=2), WORK] = 2000
    batch: Annotated[int, Field(ge=2)] = 256
    n_eval: Annotated[int, Field(ge=100), WORK] = 8000
    trim: Annotated[float, Field(ge=0.0, lt=0.5)] = 0.25
    outlier_factor: PosFloat = 10.0
    # collapsed: σ_min/σ_max of f or g below this; such seeds are left out of the trend and arm
    collapse_ratio: PosFloat = 0.1
    arm_sigma: NonNegFloat | None = 0.4  # None: no batch/negatives arm
    arm_batches: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=2), Unique] = [
        64, 256, 512]
    # e^{−2(1+β)/τ} must stay a normal float32 at τ = 0.07: β ≤ 2
    arm_beta_hard: Annotated[float, Field(gt=0.0, le=2.0)] = 1.0
    arm_gap_share: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.5
    seed: Seed = 0

    @model_validator(mode="after")
    def _some_mismatch(self) -> ModalityGapConfig:
        if not any(s > 0 for s in self.sigmas):
            raise ValueError("sigmas needs a value > 0: the gap claims are about mismatched "
                             "conditional laws (σ_mis > 0)")
        if self.arm_sigma is not None and (self.arm_sigma <= 0 or not any(
                math.isclose(s, self.arm_sigma, abs_tol=1e-12) for s in self.sigmas)):
            raise _KeyProblem("simulation.modality_gap.arm_sigma", self.arm_sigma,
                              f"a σ_mis > 0 of sigmas {self.sigmas}, or null")
        if self.batch not in self.arm_batches:
            raise _KeyProblem("simulation.modality_gap.arm_batches", self.arm_batches,
                              f"a list that includes batch ({self.batch}): the experiment's run "
                              "is the arm's reference")
        return self


class PlackettLuceConfig(Strict):
    """WEINCE Table 1 by Monte Carlo: winners of each index model against its closed-form link."""

    candidates: Annotated[int, Field(ge=2)] = 16
    sets: Annotated[PosInt, WORK] = 8
    trials: Annotated[int, Field(ge=100), WORK] = 50_000  # per set: DKW half-width ≈ 0.0076 at 8 sets
    tau: PosFloat = 0.2      # Gumbel row: softmax(s/τ)
    beta: PosFloat = 2.0     # Weibull row: (1 − s)^{−β}
    alpha: PosFloat = 5.0    # Fréchet row: (1 + s)^α
    wrong_exponent: PosFloat = 1.25  # control: the model's own link with its exponent × this

    @field_validator("wrong_exponent")
    @classmethod
    def _wrong(cls, v: float) -> float:
        if v == 1.0:
            raise ValueError("must differ from 1 (the control scores winners against a wrong link)")
        return v


class LargeKConfig(Strict):
    """WEINCE Thm 2.4: non-canonical utilities approach the tail-weight law as K grows."""

    ks: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=2)] = [2, 4, 16, 64, 256]
    sets: Annotated[PosInt, WORK] = 4
    trials: Annotated[int, Field(ge=100), WORK] = 40_000
    tau: PosFloat = 0.2      # the exponential-noise (Gumbel-domain) example U = s/τ + E


class MismatchConfig(Strict):
    """WEINCE Prop. C.3: certified bounds on min over τ̃ of the worst-set TV."""

    candidates: Annotated[int, Field(ge=2)] = 16
    sets: Annotated[PosInt, WORK] = 500
    taus: Annotated[list[PosFloat], Field(min_length=1)] = [0.1, 0.2]
    lambdas: list[Annotated[float, Field(gt=0.0, lt=1.0)]] = [0.33, 0.5]
    gap: Annotated[float, Field(gt=0.0, le=0.01)] = 1e-4  # upper − lower bound at the end


class LinkTheoryConfig(ExperimentConfig):
    """WEINCE §2.1–2.2, Table 1, Thm 2.4, Prop. C.3: link theory that needs no encoder."""

    RUNS = "link_theory:run_link_theory"

    score_low: Annotated[float, Field(gt=-1.0, lt=1.0)] = -0.5
    score_high: Annotated[float, Field(gt=-1.0, lt=1.0)] = 0.95
    plackett_luce: PlackettLuceConfig = PlackettLuceConfig()
    large_k: LargeKConfig = LargeKConfig()
    mismatch: MismatchConfig = MismatchConfig()
    seed: Seed = 0

    @model_validator(mode="after")
    def _range(self) -> LinkTheoryConfig:
        if self.score_low >= self.score_high:
            raise _KeyProblem("simulation.link_theory.score_low", self.score_low,
                              f"below score_high ({self.score_high})")
        return self


class AuCollapseConfig(ExperimentConfig):
    """Wang–Isola (the essay's §3.1–3.2): alignment alone collapses an encoder onto one point;
    alignment + λ·uniformity (and InfoNCE, the control) keeps it spread. A one-hidden-layer ReLU
    encoder onto S^{dim_out − 1}, positive pairs two augmented views of a Gaussian-mixture point,
    every method from the same initial weights on the same batches; at ``steps`` and at twice the
    steps (one run continued)."""

    RUNS = "au_collapse:run_au_collapse"

    seeds: Annotated[int, Field(ge=2), WORK] = 8
    steps: Annotated[PosInt, WORK] = 500
    batch: Annotated[int, Field(ge=2)] = 128
    lr: PosFloat = 0.01
    optimizer: Literal["adam", "sgd"] = "adam"
    dim_in: PosInt = 16
    hidden: PosInt = 64
    dim_out: Annotated[int, Field(ge=2)] = 8
    clusters: PosInt = 8
    radius: NonNegFloat = 2.0
    cluster_sd: NonNegFloat = 0.5
    aug_sd: PosFloat = 0.3
    uniform_weight: PosFloat = 1.0
    alpha: PosFloat = 2.0
    t: PosFloat = 2.0
    tau: PosFloat = 0.2
    n_eval: Annotated[int, Field(ge=100), WORK] = 1000
    seed: Seed = 0


class SgdNoiseConfig(ExperimentConfig):
    """Annealing paper §4: mini-batch SGD's own gradient noise as the SDE's noise. On S1's
    landscape (InfoNCE on (S¹)^4 from the interleaved trap), at the log schedule β = c·ln(t + K)
    with c = c_ratio·c* and S1's P2 step rule dt_k = min(dt_max, h/(κ_s²β_k)), the same chains run
    three ways: SGD on a minibatch of ``batch`` of the 4 anchor terms (drawn without replacement,
    rescaled to be unbiased) with no injected noise, gradient descent on the full gradient (the
    control), and the full gradient with the injected Langevin noise (the SDE reference); every
    run again at half the step."""

    RUNS = "sgd_noise:run_sgd_noise"

    kappa_s: PosFloat = 1.0
    # c ≤ c*: the schedules under which the annealed SDE escapes (Thm 3.2)
    c_ratio: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    K: Annotated[float, Field(gt=1.0)] = math.e
    batch: Annotated[int, Field(ge=1, le=3)] = 1  # of S1's 4 anchor terms; 4 has no noise
    chains: Annotated[int, Field(ge=10), WORK] = 200
    dt_max: PosFloat = 1e-2
    h: PosFloat = 0.4
    horizon: PosFloat = 100.0
    first_check: PosFloat = 0.1
    beta_bar: PosFloat = 20.0
    angle_sd: NonNegFloat = 0.05
    seed: Seed = 0

    @model_validator(mode="after")
    def _first_check_inside(self) -> SgdNoiseConfig:
        if self.first_check > self.horizon:
            raise _KeyProblem("simulation.sgd_noise.first_check", self.first_check,
                              f"at most horizon ({self.horizon})")
        return self


def _an_experiment(name: str) -> str:
    if name not in experiment_names():
        raise ValueError(f"unknown experiment: expected one of {', '.join(experiment_names())}")
    return name


class SimulationConfig(Strict):
    """The simulate stage: one DVC stage instance per listed experiment (the annealing and
    geometry papers, Wang–Isola's Theorem 1 and alignment-only collapse, WEINCE's link theory).
    Every other field is an experiment, in the order the default list runs them."""

    experiments: Annotated[list[Annotated[str, AfterValidator(_an_experiment)]], Unique] = Field(
        default_factory=lambda: list(experiment_names()))
    s0: S0Config = S0Config()
    s1: S1Config = S1Config()
    hessian: HessianConfig = HessianConfig()
    prop_c2: PropC2Config = PropC2Config()
    negatives: NegativesConfig = NegativesConfig()
    large_batch: LargeBatchConfig = LargeBatchConfig()
    gibbs: GibbsConfig = GibbsConfig()
    modality_gap: ModalityGapConfig = ModalityGapConfig()
    lifted_energy: LiftedEnergyConfig = LiftedEnergyConfig()
    link_theory: LinkTheoryConfig = LinkTheoryConfig()
    au_collapse: AuCollapseConfig = AuCollapseConfig()
    sgd_noise: SgdNoiseConfig = SgdNoiseConfig()


def experiment_names() -> tuple[str, ...]:
    """Every simulation experiment: the :class:`ExperimentConfig` fields of
    :class:`SimulationConfig`, in order."""
    return tuple(name for name, f in SimulationConfig.model_fields.items()
                 if isinstance(f.annotation, type) and issubclass(f.annotation, ExperimentConfig))

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["AuCollapseConfig", "Dynamics", "ExperimentConfig", "GibbsConfig", "HessianConfig",
    "LargeBatchConfig", "LargeKConfig", "LiftedEnergyConfig", "LinkTheoryConfig", "MismatchConfig",
    "ModalityGapConfig", "NegativesConfig", "PlackettLuceConfig", "PropC2Config",
    "S0ArrheniusConfig", "S0Config", "S0ErgodicityConfig", "S0ScheduleConfig", "S0SgdConfig",
    "S1Config", "SgdNoiseConfig", "SimulationConfig", "experiment_names"]
