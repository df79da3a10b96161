"""The tail diagnostics: banks, POT/GPD, the link test, ablations, allocation, noise floor."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, model_validator

from infonce_lab.params.base import (
    WORK,
    Name,
    PosFloat,
    PosInt,
    Seed,
    Strict,
    Unique,
    _KeyProblem,
)


class LinkBankConfig(Strict):
    """WEINCE §2.3.2: ``batches`` batches of ``batch_images`` images, two views each (the paper:
    32 × 256)."""

    batches: Annotated[int, Field(ge=4)] = 10
    batch_images: Annotated[int, Field(ge=8)] = 128
    embedding: Literal["z", "h"] = "z"  # projector outputs (the released code) or backbone features


class POTConfig(Strict):
    """WEINCE §2.3.1, Fig. 3: first-view cosines of distinct pairs in ``repeats`` batches of
    ``batch_images``."""

    repeats: PosInt = 16
    batch_images: Annotated[int, Field(ge=8)] = 257
    q: Annotated[float, Field(gt=0.5, lt=1.0)] = 0.99
    stability_qs: Annotated[list[Annotated[float, Field(gt=0.5, lt=1.0)]], Unique] = [
        0.98, 0.985, 0.99, 0.992, 0.995]
    min_exceedances: Annotated[int, Field(ge=10)] = 100
    bootstrap: Annotated[int, Field(ge=0, le=100_000), WORK] = 200  # image-cluster bootstrap (ξ̂, x̂_F)
    density_bins: Annotated[int, Field(ge=5)] = 40


class LinkTestConfig(Strict):
    """WEINCE §2.3.2, App. D.3–D.5. ``placements``: where 1/τ sits in H1 (the paper leaves it
    open, so both are choices)."""

    placements: Annotated[list[Literal["inside", "outside"]], Field(min_length=1)] = ["inside", "outside"]
    held_in_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.5
    bootstrap: Annotated[int, Field(ge=100, le=1_000_000), WORK] = 2000
    lrt_replicates: Annotated[int, Field(ge=0, le=100_000), WORK] = 39
    lrt_every_placement: StrictBool = False  # the LRT is most of the test's time: first placement only
    cv_folds: Annotated[int, Field(ge=0, le=100), WORK] = 5
    optimizer: Literal["newton", "lbfgs"] = "newton"


class AblationConfig(Strict):
    """WEINCE App. D.6, D.1 (run with the first placement)."""

    frechet: StrictBool = True
    hardness_ks: list[PosInt] = [32, 64, 128, 254]
    pool_sizes: list[PosInt] = [64, 128, 256, 512, 1024]
    pool_hard_k: PosInt = 32


class AllocationConfig(Strict):
    """WEINCE App. C.2, Fig. 6: random subsets of ``k`` negatives from a pool of ``pool`` per
    anchor."""

    pool: Annotated[int, Field(ge=2)] = 1024
    k: PosInt = 127
    subsets: Annotated[int, Field(ge=1, le=100_000), WORK] = 20
    anchors: PosInt = 512
    bins: Annotated[int, Field(ge=5)] = 40
    bootstrap: Annotated[int, Field(ge=0, le=100_000), WORK] = 400  # image-cluster bootstrap of the TV gap


class RepulsionConfig(Strict):
    """Wang & Isola's hardness-aware temperature (essay §5): the share of InfoNCE's repulsive
    gradient on each anchor's hardest negatives, on the link bank, at each τ."""

    taus: Annotated[list[PosFloat], Field(min_length=2)] = [1.0, 0.5, 0.2, 0.1, 0.07]
    hard_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.01


class NoiseFloorConfig(Strict):
    """WEINCE App. C.1 (Fig. 5), the synthetic estimation experiment (independent of the runs)."""

    scores: Annotated[list[Annotated[float, Field(ge=-1.0, lt=1.0)]], Field(min_length=2)] = [0.15, 0.45, 0.70, 0.90]
    beta: PosFloat = 0.8
    ns: Annotated[list[PosInt], Field(min_length=1)] = [100, 200, 500, 1000, 2000, 5000, 10000]
    replicates: Annotated[int, Field(ge=10)] = 12000
    seed: Seed = 20260113


class TailsConfig(Strict):
    """The diagnose stage: every run, every kept checkpoint and the final weights."""

    # with each run's own seed, the bank draw: every configuration and checkpoint of one seed is
    # diagnosed on the same images and views (differences between them are the encoder's), each
    # seed on its own draw (the spread over seeds carries the bank's error too)
    seed: Seed = 0
    # the primary block's losses whose runs (all their seeds, every kept checkpoint) are
    # diagnosed beside the grid's: the tail claims are decided on configurations with enough seeds
    primary_losses: list[Name] = []
    bank: LinkBankConfig = LinkBankConfig()
    pot: POTConfig = POTConfig()
    link: LinkTestConfig = LinkTestConfig()
    ablations: AblationConfig = AblationConfig()
    allocation: AllocationConfig = AllocationConfig()
    repulsion: RepulsionConfig = RepulsionConfig()
    noise_floor: NoiseFloorConfig = NoiseFloorConfig()

    @model_validator(mode="after")
    def _sizes_fit_the_bank(self) -> TailsConfig:
        self.check_bank(self.bank.batches, self.bank.batch_images, "tails.bank")
        return self

    def check_bank(self, batches: int, batch_size: int, bank: str) -> None:
        """The ablations' and the allocation's sizes fit a link bank of ``batches`` batches of
        ``batch_size`` items, two views each (``bank``: its params key, for the message)."""
        negatives = 2 * batch_size - 2
        for i, k in enumerate(self.ablations.hardness_ks):
            if k > negatives:
                raise _KeyProblem(f"tails.ablations.hardness_ks[{i}]", k,
                                  f"at most {negatives} (2·{bank} batch size − 2 negatives per "
                                  "anchor)")
        # Pools draw views of other items from the whole bank (2 views per item per batch).
        views = 2 * batches * batch_size
        pool_max = views - 2 * batches  # worst case: the anchor's item in every batch
        for i, m in enumerate(self.ablations.pool_sizes):
            if not self.ablations.pool_hard_k <= m <= pool_max:
                raise _KeyProblem(f"tails.ablations.pool_sizes[{i}]", m,
                                  f"between tails.ablations.pool_hard_k ({self.ablations.pool_hard_k}) and "
                                  f"{pool_max} (the views of other items in {bank})")
        if self.allocation.pool > pool_max:
            raise _KeyProblem("tails.allocation.pool", self.allocation.pool,
                              f"at most {pool_max} (the views of other items in {bank})")
        if self.allocation.k > self.allocation.pool:
            raise _KeyProblem("tails.allocation.k", self.allocation.k,
                              f"at most tails.allocation.pool ({self.allocation.pool})")
        if self.allocation.anchors > views:
            raise _KeyProblem("tails.allocation.anchors", self.allocation.anchors,
                              f"at most {views} (the anchors of {bank})")

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["AblationConfig", "AllocationConfig", "LinkBankConfig", "LinkTestConfig",
    "NoiseFloorConfig", "POTConfig", "RepulsionConfig", "TailsConfig"]
