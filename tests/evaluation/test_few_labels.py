"""The few-label probe and kNN against a brute-force reference: scikit-learn's own pipeline and
an explicit weighted vote, on the same label draws."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from infonce_lab.evaluation.few_labels import few_label_accuracy, label_draws


def _blobs(rng: np.random.Generator, n: int, spread: float) -> tuple[np.ndarray, np.ndarray]:
    y = np.repeat(np.arange(4), n)
    centres = rng.normal(size=(4, 6)) * 3
    return centres[y] + spread * rng.normal(size=(len(y), 6)), y


def test_draws_are_stratified_distinct_and_seeded():
    y = np.repeat(np.arange(5), [7, 3, 9, 4, 5])
    draws = label_draws(y, 3, 10, seed=1)
    assert len(draws) == 10
    for d in draws:
        assert len(set(d)) == len(d) == 15
        assert np.array_equal(np.bincount(y[d]), [3] * 5)
    assert all(np.array_equal(a, b) for a, b in zip(draws, label_draws(y, 3, 10, 1), strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(draws, label_draws(y, 3, 10, 2),
                                                         strict=True))
    with pytest.raises(ValueError, match="class 1 has only 3"):
        label_draws(y, 4, 1, 0)


def _weighted_vote(bx, by, qx, k, temperature):
    bn = bx / np.linalg.norm(bx, axis=1, keepdims=True)
    out = []
    for q in qx / np.linalg.norm(qx, axis=1, keepdims=True):
        s = bn @ q
        top = np.argsort(-s)[:k]
        votes = np.zeros(by.max() + 1)
        for j in top:
            votes[by[j]] += np.exp((s[j] - s[top[0]]) / temperature)
        out.append(votes.argmax())
    return np.array(out)


def test_matches_a_brute_force_reference():
    rng = np.random.default_rng(0)
    x, y = _blobs(rng, 20, 2.5)
    tx, ty = _blobs(np.random.default_rng(0), 20, 2.5)  # same centres, fresh noise
    tx = tx + 0.3 * rng.normal(size=tx.shape)
    got = few_label_accuracy(x, y, tx, ty, per_class=2, draws=6, seed=3, k=50, temperature=0.1)
    probe, knn = [], []
    for d in label_draws(y, 2, 6, 3):
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(x[d], y[d])
        probe.append(model.score(tx, ty))
        knn.append(np.mean(_weighted_vote(x[d], y[d], tx, len(d), 0.1) == ty))
    assert got["probe_test_acc"] == pytest.approx(np.mean(probe), abs=1e-12)
    assert got["knn_test_acc"] == pytest.approx(np.mean(knn), abs=1e-6)
    assert got["probe_test_acc_draw_std"] == pytest.approx(np.std(probe), abs=1e-12)


def test_separable_features_score_one_and_noise_scores_chance():
    rng = np.random.default_rng(1)
    x, y = _blobs(rng, 30, 0.05)
    sep = few_label_accuracy(x, y, x, y, per_class=1, draws=5, seed=0, k=50, temperature=0.1)
    assert sep["probe_test_acc"] == 1.0 and sep["knn_test_acc"] == 1.0
    noise = rng.normal(size=x.shape)
    chance = few_label_accuracy(noise, y, rng.normal(size=x.shape), y, per_class=3, draws=40,
                                seed=0, k=50, temperature=0.1)
    assert abs(chance["probe_test_acc"] - 0.25) < 0.06 and abs(chance["knn_test_acc"] - 0.25) < 0.06
