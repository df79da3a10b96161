"""InfoNCE's label oracle (``mask_same_class``; Chuang et al. 2020, §5, the "unbiased" objective):
each anchor's negatives of its own class leave the softmax denominator (and the top-M set), its
positive stays. Checked against loops over anchors and candidates written from that definition,
on both candidate sets and with DCL and the top-M term; then the edge cases the training loop
meets: labels that mask nothing, an anchor left with no negative, unlabelled (−1) images."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from infonce_lab.losses import info_nce
from infonce_lab.losses.infonce import InfoNCELoss
from infonce_lab.losses.objects import needs_labels, protocol_gaps
from infonce_lab.params import InfoNCEConfig
from infonce_lab.pipeline.registry import LOSSES, build_loss
from loss_knobs import info_nce_knobs


def _views(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, d, generator=g, dtype=torch.float64)
    return z1, z1 + 0.7 * torch.randn(n, d, generator=g, dtype=torch.float64)


def brute_force_oracle(z1: torch.Tensor, z2: torch.Tensor, labels: list[int], tau: float,
                       candidates: str = "all_views", decoupled: bool = False,
                       topm_weight: float = 0.0, top_m: int = 50) -> float:
    """The masked loss read literally, in float64 Python numbers.

    all_views: the 2N views, view k of pair k mod N, anchor i's positive (i + N) mod 2N and its
    candidates every other view; cross_view: row i of view 1 against the N rows of view 2, its
    positive column i. A candidate c ≠ positive is a negative unless its pair's label equals the
    anchor's and is ≥ 0. Term i = −s(i, p)/τ + log Σ_{c ∈ den} exp(s(i, c)/τ), den = positive +
    negatives (negatives alone when decoupled), 0 when the anchor has no negative left; the top-M
    term is the same softmax over the positive and the top_m most similar negatives."""
    n = z1.shape[0]
    if candidates == "all_views":
        z = F.normalize(torch.cat([z1, z2]).double(), dim=1)
        anchors, cols = z, z
        pair = [k % n for k in range(2 * n)]
        positive = [(i + n) % (2 * n) for i in range(2 * n)]
        excluded_self = True
    else:
        anchors, cols = F.normalize(z1.double(), dim=1), F.normalize(z2.double(), dim=1)
        pair = list(range(n))
        positive = list(range(n))
        excluded_self = False
    main = top = 0.0
    m = anchors.shape[0]
    for i in range(m):
        p = positive[i]
        s = {c: float(anchors[i] @ cols[c]) for c in range(cols.shape[0])}
        lab = labels[pair[i]]
        negatives = [c for c in s if c != p and not (excluded_self and c == i)
                     and not (lab >= 0 and labels[pair[c]] == lab)]
        if negatives:
            den = negatives if decoupled else [p, *negatives]
            main += -s[p] / tau + math.log(sum(math.exp(s[c] / tau) for c in den))
        hardest = sorted(negatives, key=lambda c: -s[c])[:top_m]
        top += -s[p] / tau + math.log(sum(math.exp(s[c] / tau) for c in [p, *hardest]))
    return (main + topm_weight * top) / m


LABELS = [0, 1, 0, 2, 1, 0, 3, 2, 1]   # nine pairs, classes with 1–3 members


@pytest.mark.parametrize("candidates", ["all_views", "cross_view"])
@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize(("topm_weight", "top_m"), [(0.0, 50), (0.5, 3), (0.5, 50)])
@pytest.mark.parametrize("tau", [0.1, 0.5])
def test_matches_the_loop_over_anchors_and_candidates(candidates, decoupled, topm_weight, top_m,
                                                      tau):
    z1, z2 = _views(len(LABELS), 5, 0)
    loss, stats = info_nce(z1, z2, tau, labels=torch.tensor(LABELS), **info_nce_knobs(decoupled=decoupled, topm_weight=topm_weight, top_m=top_m, candidates=candidates))
    ref = brute_force_oracle(z1, z2, LABELS, tau, candidates, decoupled, topm_weight, top_m)
    assert float(loss) == pytest.approx(ref, rel=1e-12)
    plain, _ = info_nce(z1, z2, tau, **info_nce_knobs(decoupled=decoupled, topm_weight=topm_weight, top_m=top_m, candidates=candidates))
    assert abs(float(plain) - ref) > 1e-3   # the masking is seen: not plain InfoNCE's value
    # the share of negatives the oracle removed, counted from the labels: each ordered pair of
    # same-class pairs is 4 view pairs among all_views' 2N(2N − 2) negatives, 1 of N(N − 1)
    n = len(LABELS)
    same = sum(a == b for i, a in enumerate(LABELS) for j, b in enumerate(LABELS) if i != j)
    share = (4 * same / (2 * n * (2 * n - 2)) if candidates == "all_views"
             else same / (n * (n - 1)))
    assert float(stats["masked_negative_share"]) == pytest.approx(share, rel=1e-6)


@pytest.mark.parametrize("candidates", ["all_views", "cross_view"])
@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("topm_weight", [0.0, 0.5])
def test_labels_that_mask_nothing_give_plain_infonce_exactly(candidates, decoupled, topm_weight):
    """All classes distinct, or all unknown (−1, never a class): not one bit differs."""
    z1, z2 = _views(8, 4, 1)
    plain, _ = info_nce(z1.float(), z2.float(), 0.3, **info_nce_knobs(decoupled=decoupled, topm_weight=topm_weight, top_m=4, candidates=candidates))
    for labels in (torch.arange(8), torch.full((8,), -1)):
        masked, stats = info_nce(z1.float(), z2.float(), 0.3, labels=labels, **info_nce_knobs(decoupled=decoupled, topm_weight=topm_weight, top_m=4, candidates=candidates))
        assert torch.equal(masked, plain)
        assert float(stats["masked_negative_share"]) == 0.0


@pytest.mark.parametrize("candidates", ["all_views", "cross_view"])
@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("topm_weight", [0.0, 0.5])
def test_an_anchor_with_no_negative_left_is_finite_and_contributes_zero(candidates, decoupled,
                                                                        topm_weight):
    """One class in the batch: every negative is a false one. Each softmax then holds the
    positive alone (−log 1 = 0); DCL's empty denominator would be log 0 = −∞ and a NaN
    gradient, which the oracle defines away as the same 0."""
    z1, z2 = (z.clone().requires_grad_(True) for z in _views(6, 4, 2))
    loss, stats = info_nce(z1, z2, 0.2, labels=torch.zeros(6, dtype=torch.long), **info_nce_knobs(decoupled=decoupled, topm_weight=topm_weight, top_m=3, candidates=candidates))
    assert float(loss.detach()) == 0.0 and float(stats["masked_negative_share"]) == 1.0
    g1, g2 = torch.autograd.grad(loss, (z1, z2))
    assert torch.isfinite(g1).all() and torch.isfinite(g2).all()
    assert float(g1.abs().sum() + g2.abs().sum()) == 0.0
    # a batch where only some anchors are left without negatives: finite, and equal to the loop
    labels = [0, 0, 0, 0, 0, 1]   # five pairs of class 0, one of class 1
    a, b = _views(6, 4, 3)
    a.requires_grad_(True)
    loss, _ = info_nce(a, b, 0.2, labels=torch.tensor(labels), **info_nce_knobs(decoupled=decoupled, topm_weight=topm_weight, top_m=3, candidates=candidates))
    assert float(loss.detach()) == pytest.approx(
        brute_force_oracle(a.detach(), b, labels, 0.2, candidates, decoupled, topm_weight, 3),
        rel=1e-12)
    (grad,) = torch.autograd.grad(loss, (a,))
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("candidates", ["all_views", "cross_view"])
@pytest.mark.parametrize("decoupled", [False, True])
def test_gradcheck_float64(candidates, decoupled):
    z1, z2 = (z.clone().requires_grad_(True) for z in _views(5, 3, 4))
    labels = torch.tensor([0, 1, 0, 1, 1])   # no row without negatives: every term is smooth
    assert torch.autograd.gradcheck(
        lambda a, b: info_nce(a, b, 0.5, labels=labels, **info_nce_knobs(decoupled=decoupled, candidates=candidates))[0], (z1, z2))
    # with a class-pure batch, DCL's rows are the constant 0: gradient 0, not NaN
    pure = torch.zeros(5, dtype=torch.long)
    assert torch.autograd.gradcheck(
        lambda a, b: info_nce(a, b, 0.5, labels=pure, **info_nce_knobs(decoupled=decoupled, candidates=candidates))[0], (z1, z2))


def test_labels_of_the_wrong_shape_or_kind_are_refused():
    z1, z2 = _views(4, 3, 5)
    with pytest.raises(ValueError, match="3 labels for a batch of 4 pairs"):
        info_nce(z1, z2, 0.5, labels=torch.tensor([0, 1, 2]), **info_nce_knobs())
    with pytest.raises(ValueError, match="one integer class per pair"):
        info_nce(z1, z2, 0.5, labels=torch.zeros(4), **info_nce_knobs())
    with pytest.raises(ValueError, match="one integer class per pair"):
        info_nce(z1, z2, 0.5, labels=torch.zeros(4, 1, dtype=torch.long), **info_nce_knobs())


def test_the_loss_object_declares_it_needs_labels_and_refuses_a_call_without():
    oracle = build_loss(InfoNCEConfig(mask_same_class=True))
    assert isinstance(oracle, InfoNCELoss) and oracle.needs_labels and needs_labels(oracle)
    assert protocol_gaps(oracle) == []
    z1, z2 = _views(6, 3, 6)
    with pytest.raises(ValueError, match="mask_same_class.*labels"):
        oracle(z1, z2, 0.5)
    labels = torch.tensor([0, 1, 0, 1, 2, 2])
    loss, stats = oracle(z1, z2, 0.5, labels=labels)
    assert torch.equal(loss, info_nce(z1, z2, 0.5, labels=labels, **info_nce_knobs())[0])
    assert "masked_negative_share" in stats
    # every other registered loss, at its defaults, reads no labels
    for config in LOSSES:
        assert not needs_labels(build_loss(config())), config
    plain = build_loss(InfoNCEConfig())
    assert not plain.needs_labels
    assert torch.equal(plain(z1, z2, 0.5)[0], info_nce(z1, z2, 0.5, **info_nce_knobs())[0])


def test_protocol_gaps_sees_a_needs_labels_that_is_not_a_bool():
    loss = build_loss(InfoNCEConfig())
    loss.needs_labels = "yes"  # type: ignore[assignment]
    assert protocol_gaps(loss) == ["needs_labels as a bool"]
