"""Score banks, ablations and the per-checkpoint diagnosis, against brute force and known truth."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infonce_lab.params import TailsConfig
from infonce_lab.pipeline.diagnose import diagnose_banks
from infonce_lab.tails.ablations import frechet_ablation, hardness_ablation, pool_size_ablation
from infonce_lab.tails.banks import pool_order, pool_scores
from infonce_lab.tails.link import features, split_batches
from references import link_bank, pot_pairs

IMAGES = torch.rand(200, 1, 8, 8, generator=torch.Generator().manual_seed(0))
PROJ = torch.randn(64, 12, generator=torch.Generator().manual_seed(1))


def diagnose_encoder(embed, images: torch.Tensor, augment, cfg: TailsConfig):
    """Every diagnostic of one frozen encoder, its banks drawn here (the stage reads the banks
    the evaluate stage extracted)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    bank = link_bank(embed, images, augment, cfg.bank.batches, cfg.bank.batch_images, gen)
    pairs = pot_pairs(embed, images, augment, cfg.pot.repeats, cfg.pot.batch_images, gen)
    return diagnose_banks(bank, pairs, cfg)


def embed(x: torch.Tensor) -> torch.Tensor:
    return x.flatten(1) @ PROJ


def jitter(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return x + 0.1 * torch.randn(x.shape, generator=gen)


def test_link_bank_rows_are_the_batch_cosines_with_the_positive_first():
    bank = link_bank(embed, IMAGES, jitter, batches=3, batch_images=10,
                     gen=torch.Generator().manual_seed(2))
    assert bank.scores.shape == (60, 19) and bank.z.shape == (60, 12)
    assert np.array_equal(bank.batch, np.repeat([0, 1, 2], 20))
    for a in (0, 7, 13, 25, 59):
        b0 = 20 * (a // 20)
        views = bank.z[b0:b0 + 20]
        s = views @ bank.z[a]
        pos = b0 + (a - b0 + 10) % 20
        assert bank.image[pos] == bank.image[a]
        assert bank.scores[a, 0] == pytest.approx(bank.z[pos] @ bank.z[a])
        others = np.delete(s, [a - b0, pos - b0])
        np.testing.assert_allclose(np.sort(bank.scores[a, 1:]), np.sort(others), atol=1e-12)
    # every image is drawn once in the whole bank: two views, in one batch only, so the link
    # test's held-in and held-out batches never share an image
    images, counts = np.unique(bank.image, return_counts=True)
    assert len(images) == 30 and (counts == 2).all()
    assert all(len(set(bank.batch[bank.image == i])) == 1 for i in images)


def test_a_link_bank_larger_than_the_images_is_refused_naming_its_keys():
    from infonce_lab.pipeline.extract import check_banks

    with pytest.raises(ValueError, match="each image once"):
        link_bank(embed, IMAGES, jitter, batches=21, batch_images=10,
                  gen=torch.Generator().manual_seed(2))
    cfg = SMALL.model_copy(update={"bank": SMALL.bank.model_copy(
        update={"batches": 21, "batch_images": 10})})
    with pytest.raises(ValueError, match=r"tails\.bank\.batches × tails\.bank\.batch_images "
                                         r"= 21 × 10 = 210.*200 training images of dataset 'x'"):
        check_banks(cfg, 200, "x")
    check_banks(cfg, 210, "x")  # exactly every image once


def test_identical_views_give_a_positive_score_of_one():
    bank = link_bank(embed, IMAGES, lambda x, g: x, 2, 8, torch.Generator().manual_seed(0))
    np.testing.assert_allclose(bank.scores[:, 0], 1.0)


def test_pool_order_draws_other_images_uniformly_and_nested():
    image = np.repeat(np.arange(50), 4)  # every image has 4 views
    order = pool_order(image, 40, seed=3)
    assert order.shape == (200, 40)
    assert not (image[order] == image[:, None]).any()
    assert all(len(set(row)) == 40 for row in order)
    # each eligible view is equally likely: counts over anchors close to 40·200/196
    counts = np.bincount(order.ravel(), minlength=200)
    from scipy import stats
    assert stats.chisquare(counts).pvalue > 1e-3
    with pytest.raises(ValueError, match="pool of 197"):
        pool_order(image, 197, seed=0)


def test_pool_scores_match_brute_force():
    bank = link_bank(embed, IMAGES, jitter, 4, 10, torch.Generator().manual_seed(5))
    order = pool_order(bank.image, 30, seed=1)
    s_pos, pool = pool_scores(bank, order)
    np.testing.assert_allclose(s_pos, bank.scores[:, 0])
    a = 17
    np.testing.assert_allclose(pool[a], [bank.z[a] @ bank.z[j] for j in order[a]], atol=1e-12)


def test_pool_scores_in_blocks_of_rows_equal_the_whole_product(monkeypatch):
    import infonce_lab.tails.banks as banks

    bank = link_bank(embed, IMAGES, jitter, 4, 10, torch.Generator().manual_seed(5))
    order = pool_order(bank.image, 30, seed=1)
    whole = np.take_along_axis(bank.z @ bank.z.T, order, axis=1)
    np.testing.assert_array_equal(pool_scores(bank, order)[1], whole)  # one block: the product
    monkeypatch.setattr(banks, "GRAM_CHUNK_ELEMENTS", 7 * len(bank.z))  # blocks of 7 rows
    np.testing.assert_allclose(pool_scores(bank, order)[1], whole, rtol=0, atol=1e-14)


def test_pot_scores_are_the_distinct_pairs():
    gen = torch.Generator().manual_seed(4)
    s = pot_pairs(embed, IMAGES, jitter, repeats=3, batch_images=20, gen=gen).scores
    assert s.shape == (3 * 190,)
    assert np.abs(s).max() <= 1 + 1e-12
    with pytest.raises(ValueError, match="at least that many images"):
        pot_pairs(embed, IMAGES, jitter, 1, 201, gen)


def _bank(n_batches: int, per_batch: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n_batches * per_batch, 1, 16))
    alpha = np.where(rng.uniform(size=(a.shape[0], k, 1)) < 0.2,
                     rng.uniform(1.0, 6.0, size=(a.shape[0], k, 1)), rng.uniform(0.0, 0.6, size=(a.shape[0], k, 1)))
    c = alpha * a + rng.normal(size=(a.shape[0], k, 16))
    a /= np.linalg.norm(a, axis=2, keepdims=True)
    c /= np.linalg.norm(c, axis=2, keepdims=True)
    return (a * c).sum(2)


def _put_winner_first(s: np.ndarray, weights: np.ndarray, names: tuple[str, ...], seed: int) -> np.ndarray:
    """Draw each row's winner from softmax(Σ w_j f_j) and move it to column 0."""
    logits = np.tensordot(weights, features(s, names), axes=1)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    rng = np.random.default_rng(seed)
    w = np.array([rng.choice(len(r), p=r) for r in p])
    out = s.copy()
    rows = np.arange(len(s))
    out[rows, 0], out[rows, w] = s[rows, w], s[rows, 0]
    return out


def test_frechet_ablation_finds_no_frechet_gain_under_the_weibull_blend():
    s = _bank(16, 128, 127, seed=1)
    s = _put_winner_first(s, np.array([0.6 / 0.2, 0.4 / 0.2]), ("s", "g"), seed=2)
    held_in = split_batches(np.repeat(np.arange(16), 128), 0.5, 0)
    res = frechet_ablation(s, held_in)
    assert abs(res["delta_joint_vs_weibull"]) < 0.005
    assert res["lambda_weibull_joint"] == pytest.approx(0.4, abs=0.08)


def test_frechet_ablation_detects_a_frechet_link():
    """Winners from a Fréchet blend: the joint fit puts its weight on log(1 + s), not on the
    shortfall, and adding it to the Weibull blend gains held out. (s and log(1 + s) are nearly
    collinear on cosines, so the gain is small and λ_F itself is weakly identified.)"""
    s = _bank(16, 128, 127, seed=3)
    s = _put_winner_first(s, np.array([0.1 / 0.2, 0.9 / 0.2]), ("s", "h"), seed=4)
    held_in = split_batches(np.repeat(np.arange(16), 128), 0.5, 0)
    res = frechet_ablation(s, held_in)
    assert res["delta_frechet_vs_softmax"] > 0.001 and res["delta_joint_vs_weibull"] > 0.001
    assert res["lambda_frechet_joint"] > 0.5 and res["lambda_weibull_joint"] < 0.05


def test_hardness_and_pool_ablations_shapes_and_checks():
    s = _bank(8, 64, 63, seed=5)
    s = _put_winner_first(s, np.array([0.6 / 0.2, 0.4 / 0.2]), ("s", "g"), seed=6)
    held_in = split_batches(np.repeat(np.arange(8), 64), 0.5, 0)
    rows = hardness_ablation(s, held_in, [8, 32, 62])
    assert [r["k"] for r in rows] == [8, 32, 62]
    assert all(0.0 <= r["lambda_hat"] <= 1.0 for r in rows)
    with pytest.raises(ValueError, match="hardness k = 63"):
        hardness_ablation(s, held_in, [63])
    pool = s[:, 1:]
    rows = pool_size_ablation(s[:, 0], pool, held_in, [16, 62], hard_k=8)
    assert [r["pool"] for r in rows] == [16, 62]
    with pytest.raises(ValueError, match="pool size 4"):
        pool_size_ablation(s[:, 0], pool, held_in, [4], hard_k=8)


SMALL = TailsConfig.model_validate({
    "bank": {"batches": 4, "batch_images": 24},
    "pot": {"repeats": 2, "batch_images": 64, "bootstrap": 20, "min_exceedances": 10},
    "link": {"bootstrap": 200, "lrt_replicates": 9, "cv_folds": 2},
    "ablations": {"hardness_ks": [8, 46], "pool_sizes": [16, 64], "pool_hard_k": 8},
    "allocation": {"pool": 64, "k": 15, "subsets": 3, "anchors": 32},
})


def test_diagnose_encoder_is_complete_and_deterministic():
    m1, p1 = diagnose_encoder(embed, IMAGES, jitter, SMALL)
    m2, _ = diagnose_encoder(embed, IMAGES, jitter, SMALL)
    assert m1 == m2
    assert m1["pot"]["n_scores"] == 2 * 64 * 63 // 2
    assert m1["pot"]["xi_ci_low"] <= m1["pot"]["xi"] <= m1["pot"]["xi_ci_high"]
    pot = m1["pot"]
    assert pot["bootstrap_replicates"] == 20 and pot["bootstrap_clusters"] <= 128
    if pot["endpoint"] is not None and pot["endpoint_ci_low"] is not None:
        # an upper limit of None: enough replicates had ξ̂ ≥ 0, no finite endpoint
        assert pot["endpoint_ci_high"] is None or pot["endpoint_ci_low"] <= pot["endpoint_ci_high"]
        assert pot["endpoint_ci_high"] is not None or pot["endpoint_unbounded_share"] > 0
    assert m1["link"]["inside"]["lrt_floor"] == pytest.approx(0.1)
    assert set(m1["repulsion"]["share"]) == {"tau_1", "tau_0.5", "tau_0.2", "tau_0.1", "tau_0.07"}
    alloc = m1["allocation"]
    if alloc["tv_gap"] is not None:
        assert alloc["tv_gap_ci_low"] <= alloc["tv_gap_ci_high"]
    assert "frechet_lambda_score" in m1["frechet"]
    assert {"hardness_lambda_slope", "pool_delta_slope_se"} <= set(m1["ablations"])
    for placement in ("inside", "outside"):
        link = m1["link"][placement]
        assert 0.0 <= link["lambda_hat"] <= 1.0
        assert link["delta_ci_low"] <= link["delta_mean"] <= link["delta_ci_high"]
    assert m1["link"]["inside"]["lrt_pvalue"] is not None and m1["link"]["outside"]["lrt_pvalue"] is None
    assert m1["bank"]["anchors"] == 4 * 48 and m1["bank"]["candidates"] == 47
    assert [r["k"] for r in p1["hardness"]] == [8, 46]
    assert sum(p1["allocation"]["softmax_grad"]) == pytest.approx(1.0)


def test_ablation_trend_is_the_least_squares_slope_over_defined_points():
    from infonce_lab.tails.ablations import ablation_trend

    rows = [{"pool": m, "lambda_hat": lam, "delta_mean": d, "tau0_hat": t0, "lambda_boundary": b}
            for m, lam, d, t0, b in ((64, 0.3, 0.07, 0.1, False), (128, 0.8, 0.11, 0.1, False),
                                     (256, 1.0, 0.18, 0.1, True), (512, 1.0, 0.05, None, True),
                                     (1024, None, 0.0, None, False))]
    rng = np.random.default_rng(0)
    out_batches = np.repeat(np.arange(4), 10)
    deltas = np.array([r["delta_mean"] for r in rows])[:, None] + rng.normal(0, 0.01, (5, 40))
    t = ablation_trend(rows, deltas, "pool", out_batches)
    x = np.log2([64, 128, 256])  # τ̂0 → ∞ at 512 and 1024: degenerate H0, left out
    assert t["pool_lambda_points"] == 3 and t["pool_lambda_boundary_points"] == 1
    assert t["pool_lambda_slope"] == pytest.approx(np.polyfit(x, [0.3, 0.8, 1.0], 1)[0])
    assert t["pool_delta_slope"] == pytest.approx(np.polyfit(x, [0.07, 0.11, 0.18], 1)[0])
    # Δ̄'s slope se: per-anchor slope contrasts, averaged per batch, t over batches
    c = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    per_anchor = c @ deltas[:3]
    means = per_anchor.reshape(4, 10).mean(axis=1)
    assert t["pool_delta_slope_se"] == pytest.approx(means.std(ddof=1) / 2)
    assert t["pool_delta_slope_df"] == 3
    assert t["pool_lambda_spearman"] == pytest.approx(1.0)
    two = ablation_trend(rows[:2], deltas[:2], "pool", out_batches)
    assert two["pool_lambda_slope"] is None  # two points: no trend beside the noise
    # λ̂'s slope se from per-batch influences (6 held-in batches; the bound point has none)
    infl = [rng.normal(0, 0.02, 6), rng.normal(0, 0.02, 6), np.zeros(6), None, None]
    t = ablation_trend(rows, deltas, "pool", out_batches, infl)
    per_batch = c @ np.array(infl[:3])
    assert t["pool_lambda_slope_se"] == pytest.approx(np.sqrt(6 / 5 * (per_batch**2).sum()))
    assert t["pool_lambda_slope_df"] == 5
    assert ablation_trend(rows, deltas, "pool", out_batches)["pool_lambda_slope_se"] is None


def test_lambda_influence_matches_refits_on_perturbed_batches():
    """λ̂'s per-batch influence is the linear response of the fit: dropping one batch moves λ̂
    by about −ψ_b·G/(G − 1) (the jackknife)."""
    from infonce_lab.tails.ablations import _choice_gain

    s = _put_winner_first(_bank(8, 64, 63, seed=7), np.array([0.6 / 0.2, 0.4 / 0.2]), ("s", "g"), 8)
    batch = np.repeat(np.arange(8), 64)
    held_in = np.ones(len(s), dtype=bool)
    held_in[-64:] = False  # one batch held out so that held_out_gain has something to score
    row, _, infl = _choice_gain(s, held_in, "inside", batch)
    assert infl is not None and infl.shape == (7,)
    for b in (0, 3, 5):  # moves of 0.05, −0.22, −0.03 in λ̂
        keep = held_in & (batch != b)
        sub, _, _ = _choice_gain(s, keep, "inside")
        assert sub["lambda_hat"] - row["lambda_hat"] == pytest.approx(-infl[b] * 7 / 6, rel=0.15)


def test_frechet_score_test_sees_a_frechet_link_and_not_a_weibull_one():
    """The score test at the Weibull fit: under a Weibull truth the signed Fréchet weight is
    compatible with 0; under a Fréchet truth it is positive. On cosines log(1 + s) is nearly
    collinear with (s, −log(1 − s)) where the candidates compete (R² near 1)."""
    batch = np.repeat(np.arange(16), 128)
    held_in = split_batches(batch, 0.5, 0)
    s = _put_winner_first(_bank(16, 128, 127, seed=1), np.array([0.6 / 0.2, 0.4 / 0.2]), ("s", "g"), 2)
    weibull = frechet_ablation(s, held_in, batch_ids=batch)
    lam, se = weibull["frechet_lambda_score"], weibull["frechet_lambda_score_se"]
    assert abs(lam) < 3 * se
    assert weibull["frechet_collinearity_r2"] > 0.9
    assert weibull["delta_joint_vs_weibull_df"] == 7
    s = _put_winner_first(_bank(16, 128, 127, seed=3), np.array([0.1 / 0.2, 0.9 / 0.2]), ("s", "h"), 4)
    frechet = frechet_ablation(s, held_in, batch_ids=batch)
    # even a Fréchet weight of 0.9 is only just visible (z ≈ 2.3 on 1,024 anchors × 127
    # candidates): the collinearity the report's identifiability check is about
    assert frechet["frechet_lambda_score"] > 2 * frechet["frechet_lambda_score_se"]


def test_repulsion_shares_against_brute_force_and_their_limits():
    from infonce_lab.tails.repulsion import repulsion_shares

    rng = np.random.default_rng(2)
    s = np.clip(rng.normal(0.0, 0.3, size=(40, 201)), -1, 1)
    s[:, 0] = 0.9
    batch = np.repeat(np.arange(4), 10)
    out = repulsion_shares(s, batch, [1.0, 0.1, 0.01, 100.0], hard_fraction=0.01)
    assert out["hard_k"] == 2 and out["negatives"] == 200 and out["df"] == 3
    for tau in (1.0, 0.1):
        p = np.exp(s[:, 1:] / tau)
        top = np.sort(p, axis=1)[:, -2:].sum(axis=1) / p.sum(axis=1)
        assert out["share"][f"tau_{tau:g}"] == pytest.approx(top.mean())
    assert out["share"]["tau_100"] == pytest.approx(0.01, rel=0.05)  # hot: uniform, k/M
    assert out["share"]["tau_0.01"] > 0.95  # cold: all on the hardest
    assert all(v > 0 for v in out["rise"].values())  # every step down in τ raises it
    assert set(out["rise"]) == {"tau_1", "tau_0.1", "tau_0.01"}


def test_allocation_per_anchor_histograms_rebuild_the_pooled_shares():
    from infonce_lab.tails.allocation import gradient_allocation, tv_to_risk

    rng = np.random.default_rng(3)
    bank = np.clip(rng.normal(0.1, 0.3, size=(30, 200)), -1, 0.999)
    s_pos = rng.uniform(0.5, 0.95, size=30)
    out = gradient_allocation(s_pos, bank, k=64, subsets=5, tau=0.3, beta=3.0, per_anchor=True)
    per = out["per_anchor"]
    for key in ("risk", "softmax_grad", "weibit_grad"):
        assert np.allclose(per[key].sum(axis=0) / per[key].sum(), out[key])
    ones = np.ones((1, 30))
    tv = tv_to_risk(ones @ per["risk"], ones @ per["softmax_grad"])[0]
    assert tv == pytest.approx(0.5 * np.abs(np.array(out["softmax_grad"]) - out["risk"]).sum())


def test_stored_draws_give_the_diagnostics_of_the_live_encoder(tmp_path):
    """The evaluate stage stores the banks' raw embeddings; diagnosing from the stored float32
    arrays reproduces the diagnostics computed on the live encoder exactly."""
    from infonce_lab.tails.banks import link_bank_from, link_draws, pot_draws, pot_pairs_from

    gen = torch.Generator().manual_seed(SMALL.seed)
    link = link_draws(embed, IMAGES, jitter, SMALL.bank.batches, SMALL.bank.batch_images, gen)
    pot = pot_draws(embed, IMAGES, jitter, SMALL.pot.repeats, SMALL.pot.batch_images, gen)
    np.savez(tmp_path / "bank.npz", link_z=link[0], link_images=link[1], pot_z=pot[0],
             pot_images=pot[1])
    with np.load(tmp_path / "bank.npz") as z:
        stored, _ = diagnose_banks(link_bank_from(z["link_z"], z["link_images"]),
                                   pot_pairs_from(z["pot_z"], z["pot_images"]), SMALL)
    live, _ = diagnose_encoder(embed, IMAGES, jitter, SMALL)
    assert stored == live


def test_an_encoder_that_ranks_positives_last_leaves_allocation_undefined_not_a_crash():
    """A broken (or barely trained) encoder can score each positive below every negative: the
    softmax link then fits 1/τ ≤ 0, so τ̂ is undefined and the gradient allocation, which needs
    it, says so instead of failing the stage (found on a one-epoch ViT-S at paper shapes)."""
    from infonce_lab.pipeline.diagnose import ALLOCATION_KEYS

    calls = iter(range(10**6))

    def opposite(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        # every second view is the first one negated: a linear embedding puts the pair at −1
        return jitter(x, gen) if next(calls) % 2 == 0 else -x

    metrics, plots = diagnose_encoder(embed, IMAGES, opposite, SMALL)
    assert metrics["link"]["inside"]["tau0_hat"] is None
    alloc = metrics["allocation"]
    assert set(alloc) == {*ALLOCATION_KEYS, "undefined"} and "τ̂ is undefined" in alloc["undefined"]
    assert all(alloc[k] is None for k in ALLOCATION_KEYS) and plots["allocation"] is None
