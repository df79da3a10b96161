from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from infonce_lab.losses import info_nce
from loss_knobs import direct_au_knobs, info_nce_knobs


def brute_force_nt_xent(z1: torch.Tensor, z2: torch.Tensor, tau: float, decoupled: bool) -> float:
    """Loop over anchors exactly as the definition reads."""
    z = F.normalize(torch.cat([z1, z2]).double(), dim=1)
    n2 = z.shape[0]
    n = n2 // 2
    total = 0.0
    for i in range(n2):
        p = (i + n) % n2
        num = math.exp(float(z[i] @ z[p]) / tau)
        den = sum(math.exp(float(z[i] @ z[k]) / tau) for k in range(n2)
                  if k != i and not (decoupled and k == p))
        total += -math.log(num / den)
    return total / n2


@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("tau", [0.1, 0.5, 2.0])
def test_matches_brute_force(decoupled, tau):
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(7, 5, generator=g), torch.randn(7, 5, generator=g)
    loss, _ = info_nce(z1.double(), z2.double(), tau, **info_nce_knobs(decoupled=decoupled))
    assert float(loss) == pytest.approx(brute_force_nt_xent(z1, z2, tau, decoupled), rel=1e-5)


def test_collapsed_embeddings_give_log_of_candidates():
    z = torch.ones(6, 3)
    loss, stats = info_nce(z, z, 0.3, **info_nce_knobs())
    assert float(loss) == pytest.approx(math.log(2 * 6 - 1), rel=1e-6)
    assert stats == {}


def test_scale_invariance_and_symmetry():
    g = torch.Generator().manual_seed(1)
    z1, z2 = torch.randn(9, 4, generator=g), torch.randn(9, 4, generator=g)
    a, _ = info_nce(z1, z2, 0.2, **info_nce_knobs())
    b, _ = info_nce(3.0 * z1, 0.5 * z2, 0.2, **info_nce_knobs())
    c, _ = info_nce(z2, z1, 0.2, **info_nce_knobs())
    assert float(a) == pytest.approx(float(b), rel=1e-5)
    assert float(a) == pytest.approx(float(c), rel=1e-5)


def test_gradcheck_float64():
    g = torch.Generator().manual_seed(2)
    z1 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: info_nce(a, b, 0.5, **info_nce_knobs())[0], (z1, z2))
    assert torch.autograd.gradcheck(lambda a, b: info_nce(a, b, 0.5, **info_nce_knobs(decoupled=True))[0], (z1, z2))


def test_aligned_views_lower_loss_than_random():
    g = torch.Generator().manual_seed(3)
    z1 = torch.randn(32, 16, generator=g)
    aligned, _ = info_nce(z1, z1 + 0.01 * torch.randn(32, 16, generator=g), 0.2, **info_nce_knobs())
    random, _ = info_nce(z1, torch.randn(32, 16, generator=g), 0.2, **info_nce_knobs())
    assert float(aligned) < float(random)


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="temperature"):
        info_nce(torch.randn(3, 2), torch.randn(3, 2), 0.0, **info_nce_knobs())
    with pytest.raises(ValueError, match=r"\(N, d\)"):
        info_nce(torch.randn(3, 2), torch.randn(4, 2), 0.5, **info_nce_knobs())


def test_direct_au_formula():
    from infonce_lab.losses import direct_au

    g = torch.Generator().manual_seed(5)
    z1, z2 = torch.randn(10, 4, generator=g, dtype=torch.float64), torch.randn(10, 4, generator=g, dtype=torch.float64)
    a, b = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    align = ((a - b).norm(dim=1) ** 3).mean()

    def unif(x):
        d = [math.exp(-1.5 * float(((x[i] - x[j]) ** 2).sum())) for i in range(10) for j in range(i + 1, 10)]
        return math.log(sum(d) / len(d))

    loss, st = direct_au(z1, z2, **direct_au_knobs(alpha=3.0, t=1.5, weight=0.7))
    assert float(loss) == pytest.approx(float(align) + 0.7 * 0.5 * (unif(a) + unif(b)), rel=1e-10)
    assert float(st["alignment"]) == pytest.approx(float(align), rel=1e-10)
    z1.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: direct_au(x, z2, **direct_au_knobs())[0], (z1,))


def test_symmetric_info_nce_is_clip():
    from infonce_lab.losses import symmetric_info_nce

    g = torch.Generator().manual_seed(6)
    za, zb = torch.randn(7, 3, generator=g, dtype=torch.float64), torch.randn(7, 3, generator=g, dtype=torch.float64)
    a, b = F.normalize(za, dim=1), F.normalize(zb, dim=1)
    total = 0.0
    for i in range(7):
        row = [math.exp(float(a[i] @ b[k]) / 0.3) for k in range(7)]
        col = [math.exp(float(a[k] @ b[i]) / 0.3) for k in range(7)]
        total += -math.log(row[i] / sum(row)) - math.log(col[i] / sum(col))
    loss, _ = symmetric_info_nce(za, zb, 0.3)
    assert float(loss) == pytest.approx(total / 14, rel=1e-10)


def test_topm_control_adds_softmax_over_hardest_negatives():
    g = torch.Generator().manual_seed(7)
    z1, z2 = torch.randn(9, 4, generator=g, dtype=torch.float64), torch.randn(9, 4, generator=g, dtype=torch.float64)
    base, _ = info_nce(z1, z2, 0.5, **info_nce_knobs())
    full, _ = info_nce(z1, z2, 0.5, **info_nce_knobs(topm_weight=0.5, top_m=3))
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    extra = 0.0
    for i in range(18):
        p = (i + 9) % 18
        negs = sorted((j for j in range(18) if j not in (i, p)), key=lambda j: -float(z[i] @ z[j]))[:3]
        logits = [float(z[i] @ z[p]) / 0.5] + [float(z[i] @ z[j]) / 0.5 for j in negs]
        extra += -logits[0] + math.log(sum(math.exp(v) for v in logits))
    assert float(full) == pytest.approx(float(base) + 0.5 * extra / 18, rel=1e-10)
