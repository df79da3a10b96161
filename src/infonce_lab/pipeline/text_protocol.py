"""The text evaluation protocol (Gao et al. 2021's): the evaluation texts of a corpus embedded by
an encoder, scored on STS, with SimCSE's geometry, and — on labelled sentences — through the
image study's probe and kNN (``pipeline.protocol.evaluate_features``); the TF-IDF baseline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from infonce_lab.data.splits import stratified_split
from infonce_lab.evaluation.text import sts_spearman, text_geometry
from infonce_lab.params import EvaluationConfig, TextEvaluationConfig
from infonce_lab.pipeline.protocol import evaluate_features


def labelled_split(labels: np.ndarray, cfg: TextEvaluationConfig) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) indices of the labelled sentences: stratified, seeded."""
    return stratified_split(labels, cfg.polarity_test_fraction, cfg.polarity_split_seed)


def evaluate_text(
    sts_test: Any,
    emb_test: np.ndarray,
    cfg: TextEvaluationConfig,
    eval_cfg: EvaluationConfig,
    *,
    sts_val: Any | None = None,
    emb_val: np.ndarray | None = None,
    labelled: Any | None = None,
    emb_labelled: np.ndarray | None = None,
) -> dict[str, dict[str, Any]]:
    """``{"sts": …, "geometry": …, "linear": …, "knn": …}`` (the last two when labelled data)."""
    out: dict[str, dict[str, Any]] = {"sts": {
        "test_spearman": sts_spearman(emb_test, sts_test.pairs, sts_test.scores),
        "test_set": sts_test.name, "n_test_pairs": int(len(sts_test.pairs)),
    }}
    if sts_val is not None and emb_val is not None:
        out["sts"]["val_spearman"] = sts_spearman(emb_val, sts_val.pairs, sts_val.scores)
        out["sts"]["val_set"] = sts_val.name
    out["geometry"] = text_geometry(emb_test, sts_test.pairs, sts_test.scores, sts_test.scale,
                                    cfg.align_min_gold)
    if cfg.polarity and labelled is not None and emb_labelled is not None:
        tr, te = labelled_split(labelled.labels, cfg)
        m = evaluate_features(emb_labelled[tr], labelled.labels[tr], emb_labelled[te],
                              labelled.labels[te], eval_cfg)
        out["linear"], out["knn"] = m["linear"], m["knn"]
    return out


def embed_corpus(model: Any, tokenizer: Any, corpus: Any,
                 cfg: TextEvaluationConfig) -> dict[str, np.ndarray]:
    """Evaluation embeddings of every evaluation text of a corpus (keys: sts_test, sts_val,
    labelled — the last two when the corpus has them)."""
    from infonce_lab.models.text import encode

    device = next(model.parameters()).device
    return {k: encode(model, tokenizer, texts, max_length=cfg.max_length,
                      batch_size=cfg.batch_size, device=device)
            for k, texts in evaluation_texts(corpus, cfg).items()}


def evaluation_texts(corpus: Any, cfg: TextEvaluationConfig) -> dict[str, list[str]]:
    """A corpus's evaluation texts by set: sts_test; sts_val and labelled when it has them (the
    last when ``cfg.polarity``)."""
    sets = {"sts_test": corpus.sts_test.texts}
    if corpus.sts_val is not None:
        sets["sts_val"] = corpus.sts_val.texts
    if cfg.polarity and corpus.labelled is not None:
        sets["labelled"] = corpus.labelled.texts
    return sets


def tfidf_embeddings(corpus: Any, cfg: TextEvaluationConfig) -> dict[str, np.ndarray]:
    """The TF-IDF baseline: vocabulary and idf from the unsupervised training sentences (what the
    encoders train on; no evaluation text leaks into the weights), sublinear tf, l2 rows.

    Each evaluation set keeps only the terms that occur in it (≈ 1.3k of ≈ 30k): cosines,
    distances, singular values and kNN are unchanged, and the probe's logits never see an
    all-zero column (it stays at zero after standardisation and gets no gradient) — only its
    initialisation, scaled 1/√d by the width, follows the kept columns. The 30k-wide probe was
    ≈ 20 CPU-s of the baselines' 25.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(min_df=cfg.tfidf_min_df, sublinear_tf=True).fit(corpus.train)
    out = {}
    for k, texts in evaluation_texts(corpus, cfg).items():
        x = vec.transform(texts).tocsc()
        used = np.flatnonzero(np.diff(x.indptr))   # columns with a stored (nonzero) entry
        out[k] = x[:, used].toarray().astype(np.float32)
    return out
