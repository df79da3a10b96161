from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from infonce_lab.losses import info_nce


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
    loss, _ = info_nce(z1.double(), z2.double(), tau, decoupled=decoupled)
    assert float(loss) == pytest.approx(brute_force_nt_xent(z1, z2, tau, decoupled), rel=1e-5)


def test_collapsed_embeddings_give_log_of_candidates():
    z = torch.ones(6, 3)
    loss, stats = info_nce(z, z, 0.3)
    assert float(loss) == pytest.approx(math.log(2 * 6 - 1), rel=1e-6)
    assert float(stats["pos_sim"]) == pytest.approx(1.0)


def test_scale_invariance_and_symmetry():
    g = torch.Generator().manual_seed(1)
    z1, z2 = torch.randn(9, 4, generator=g), torch.randn(9, 4, generator=g)
    a, _ = info_nce(z1, z2, 0.2)
    b, _ = info_nce(3.0 * z1, 0.5 * z2, 0.2)
    c, _ = info_nce(z2, z1, 0.2)
    assert float(a) == pytest.approx(float(b), rel=1e-5)
    assert float(a) == pytest.approx(float(c), rel=1e-5)


def test_gradcheck_float64():
    g = torch.Generator().manual_seed(2)
    z1 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: info_nce(a, b, 0.5)[0], (z1, z2))
    assert torch.autograd.gradcheck(lambda a, b: info_nce(a, b, 0.5, decoupled=True)[0], (z1, z2))


def test_aligned_views_lower_loss_than_random():
    g = torch.Generator().manual_seed(3)
    z1 = torch.randn(32, 16, generator=g)
    aligned, _ = info_nce(z1, z1 + 0.01 * torch.randn(32, 16, generator=g), 0.2)
    random, _ = info_nce(z1, torch.randn(32, 16, generator=g), 0.2)
    assert float(aligned) < float(random)


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="temperature"):
        info_nce(torch.randn(3, 2), torch.randn(3, 2), 0.0)
    with pytest.raises(ValueError, match=r"\(N, d\)"):
        info_nce(torch.randn(3, 2), torch.randn(4, 2), 0.5)
