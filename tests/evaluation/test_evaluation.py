from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import NearestNeighbors

from infonce_lab.data.splits import stratified_split
from infonce_lab.evaluation.geometry import alignment, uniformity
from infonce_lab.evaluation.knn import knn_accuracy, topk_cosine
from infonce_lab.evaluation.probe import linear_probes
from infonce_lab.evaluation.stats import mean_ci


def test_topk_matches_sklearn_cosine_neighbours():
    rng = np.random.default_rng(0)
    bank, queries = rng.normal(size=(500, 16)), rng.normal(size=(130, 16))
    _, idx = topk_cosine(torch.as_tensor(bank), torch.as_tensor(queries), k=7, chunk=32)
    nn = NearestNeighbors(n_neighbors=7, metric="cosine").fit(bank)
    _, ref = nn.kneighbors(queries)
    assert np.array_equal(idx.numpy(), ref)


def _knn_brute(bank, bl, q, ql, k, t):
    bank = bank / np.linalg.norm(bank, axis=1, keepdims=True)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    correct = 0
    for i in range(len(q)):
        s = bank @ q[i]
        top = np.argsort(-s, kind="stable")[:k]
        votes: dict[int, float] = {}
        for j in top:
            votes[bl[j]] = votes.get(bl[j], 0.0) + math.exp((s[j] - s[top[0]]) / t)
        correct += max(votes, key=votes.get) == ql[i]
    return correct / len(q)


def test_weighted_knn_matches_brute_force():
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(4, 8))
    bl, ql = rng.integers(0, 4, 300), rng.integers(0, 4, 80)
    bank = centers[bl] + 1.2 * rng.normal(size=(300, 8))
    q = centers[ql] + 1.2 * rng.normal(size=(80, 8))
    ours = knn_accuracy(bank.astype(np.float32), bl, q.astype(np.float32), ql, k=15, temperature=0.1)
    assert ours == pytest.approx(_knn_brute(bank, bl, q, ql, 15, 0.1), abs=1 / 80 + 1e-9)
    assert 0.4 < ours <= 1.0


def test_knn_rejects_k_above_bank():
    with pytest.raises(ValueError, match="exceeds the bank size"):
        topk_cosine(torch.zeros(3, 2), torch.zeros(1, 2), k=4)


def linear_probe(*args: Any, seed: int, **kw: Any) -> dict[str, float]:
    """One seed's probe: the stage trains all seeds at once (``linear_probes``)."""
    return linear_probes(*args, [seed], **kw)[0]


def test_probe_separates_separable_data():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 300)
    x = np.eye(3)[y] * 5 + 0.1 * rng.normal(size=(300, 3))
    acc = linear_probe(x, y, {"train": (x, y)}, seed=1, epochs=30, lr=1e-2)
    assert acc["train"] == 1.0


def test_probe_agrees_with_sklearn_logistic_regression(digits_splits):
    d = digits_splits
    xtr, xte = d.train_x.reshape(len(d.train_x), -1), d.test_x.reshape(len(d.test_x), -1)
    ours = linear_probe(xtr, d.train_y, {"test": (xte, d.test_y)}, seed=1, epochs=100, lr=1e-2,
                        standardize=True)["test"]
    mu, sd = xtr.mean(0), xtr.std(0) + 1e-6
    ref = LogisticRegression(max_iter=5000).fit((xtr - mu) / sd, d.train_y).score((xte - mu) / sd, d.test_y)
    assert abs(ours - ref) <= 0.02


def test_probe_is_seeded():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(100, 5)), rng.integers(0, 2, 100)
    a = linear_probe(x, y, {"t": (x, y)}, seed=4, epochs=3)
    b = linear_probe(x, y, {"t": (x, y)}, seed=4, epochs=3)
    assert a == b


def test_alignment_and_uniformity_against_definitions():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(20, 6, generator=g), torch.randn(20, 6, generator=g)
    xn, yn = x / x.norm(dim=1, keepdim=True), y / y.norm(dim=1, keepdim=True)
    assert float(alignment(x, y)) == pytest.approx(float(((xn - yn) ** 2).sum(1).mean()), rel=1e-5)
    pairs = [math.exp(-2 * float(((xn[i] - xn[j]) ** 2).sum())) for i in range(20) for j in range(i + 1, 20)]
    assert float(uniformity(x)) == pytest.approx(math.log(sum(pairs) / len(pairs)), rel=1e-5)
    same = torch.ones(5, 3)
    assert float(alignment(same, same)) == 0.0
    assert float(uniformity(same)) == pytest.approx(0.0, abs=1e-6)


def test_mean_ci_matches_scipy_t_interval():
    v = [0.91, 0.95, 0.93, 0.97]
    r = mean_ci(v)
    lo, hi = stats.t.interval(0.95, df=3, loc=np.mean(v), scale=stats.sem(v))
    assert r["mean"] - r["ci95"] == pytest.approx(lo) and r["mean"] + r["ci95"] == pytest.approx(hi)
    assert mean_ci([0.5]) == {"mean": 0.5, "std": None, "n": 1, "ci95": None}


def test_stratified_split():
    y = np.repeat(np.arange(4), [10, 11, 12, 13])
    kept, held = stratified_split(y, 0.2, seed=3)
    assert len(np.intersect1d(kept, held)) == 0 and len(kept) + len(held) == len(y)
    assert [int((y[held] == c).sum()) for c in range(4)] == [2, 2, 2, 2]
    assert np.array_equal(held, stratified_split(y, 0.2, seed=3)[1])
    assert not np.array_equal(held, stratified_split(y, 0.2, seed=4)[1])


def test_batched_probes_equal_separate_probes(digits_splits):
    d = digits_splits
    xtr, xte = d.train_x.reshape(len(d.train_x), -1), d.test_x.reshape(len(d.test_x), -1)
    sets = {"test": (xte, d.test_y)}
    batched = linear_probes(xtr, d.train_y, sets, seeds=[1, 2, 3], epochs=5, lr=1e-2, standardize=True)
    separate = [linear_probe(xtr, d.train_y, sets, seed=s, epochs=5, lr=1e-2, standardize=True)
                for s in (1, 2, 3)]
    for b, s in zip(batched, separate, strict=True):
        assert b["test"] == pytest.approx(s["test"], abs=1.5 / len(d.test_y))
    assert len({b["test"] for b in batched}) > 1  # seeds really differ


def test_knn_recall_matches_brute_force():
    from infonce_lab.evaluation.knn import knn_recall

    rng = np.random.default_rng(5)
    bl, ql = rng.integers(0, 6, 400), rng.integers(0, 6, 90)
    centers = rng.normal(size=(6, 5))
    bank = centers[bl] + 1.5 * rng.normal(size=(400, 5))
    q = centers[ql] + 1.5 * rng.normal(size=(90, 5))
    ours = knn_recall(bank, bl, q, ql, ks=[1, 2, 5, 10, 20, 50])
    bn = bank / np.linalg.norm(bank, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    order = np.argsort(-(qn @ bn.T), axis=1, kind="stable")
    for k, r in ours.items():
        ref = np.mean([(bl[order[i, :k]] == ql[i]).any() for i in range(90)])
        assert r == pytest.approx(ref, abs=1e-6)
    assert ours[1] <= ours[2] <= ours[5] <= ours[50]


def test_effective_rank_reference_values():
    from infonce_lab.evaluation.geometry import effective_rank

    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 6, generator=g) * torch.tensor([3.0, 2.0, 1.0, 1.0, 0.5, 0.1])
    xc = x.double() - x.double().mean(0)
    ev = np.linalg.eigvalsh((xc.T @ xc).numpy() / 399)
    p = ev / ev.sum()
    assert effective_rank(x) == pytest.approx(float(np.exp(-(p * np.log(p)).sum())), rel=1e-9)
    assert effective_rank(torch.randn(20000, 4, generator=g)) == pytest.approx(4.0, rel=0.01)
    assert effective_rank(torch.randn(50, 1, generator=g) * torch.ones(1, 7)) == pytest.approx(1.0)


def test_probe_within_one_point_of_logistic_regression_on_encoder_features(digits_splits):
    """The protocol's cross-check, with the shipped probe settings, on the features of
    a randomly initialised encoder of the default architecture and on raw pixels."""
    from infonce_lab.models.build import extract_features, init_encoder
    from infonce_lab.params import load_params

    p = load_params(Path(__file__).resolve().parents[2] / "params.yaml")
    cfg, d = p.evaluation.probe, digits_splits
    enc = init_encoder(p.backbones[p.study.backbones[0]], 1, seed=1)
    for xtr, xte in ((extract_features(enc, d.train_x)[0], extract_features(enc, d.test_x)[0]),
                     (d.train_x.reshape(len(d.train_x), -1), d.test_x.reshape(len(d.test_x), -1))):
        ours = linear_probe(xtr, d.train_y, {"test": (xte, d.test_y)}, seed=1, epochs=cfg.epochs,
                            lr=cfg.lr, batch_size=cfg.batch_size, standardize=cfg.standardize)["test"]
        mu, sd = xtr.mean(0), xtr.std(0) + 1e-6
        ref = LogisticRegression(max_iter=5000).fit((xtr - mu) / sd, d.train_y).score((xte - mu) / sd, d.test_y)
        assert abs(ours - ref) <= 0.01 + 1e-9


def test_ols_ci_recovers_known_slopes_and_matches_the_closed_form() -> None:
    from scipy import stats as st

    from infonce_lab.evaluation.stats import ols_ci

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = 1.0 - 0.5 * x[:, 0] + 2.0 * x[:, 1] + 0.1 * rng.normal(size=200)
    fit = ols_ci(x, y)
    assert fit["n"] == 200 and fit["dof"] == 197
    assert fit["ci_low"][0] < -0.5 < fit["ci_high"][0] and fit["ci_low"][1] < 2.0 < fit["ci_high"][1]
    # one regressor: the slope, its standard error and R² are scipy's linregress
    ref = st.linregress(x[:, 0], y)
    one = ols_ci(x[:, :1], y)
    assert one["coef"][0] == pytest.approx(ref.slope, rel=1e-10)
    assert one["se"][0] == pytest.approx(ref.stderr, rel=1e-10)
    assert one["r2"] == pytest.approx(ref.rvalue ** 2, rel=1e-10)
    with pytest.raises(ValueError, match="cannot fit"):
        ols_ci(x[:3], y[:3])
