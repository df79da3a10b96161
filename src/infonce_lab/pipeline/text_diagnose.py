"""The text_diagnose stage for one packaged sentence encoder: the image runs' tail diagnostics
(WEINCE §2.3: POT, the softmax-vs-Weibull link test with its ablations, gradient allocation,
the repulsion shares) on a bank of word-crop views of the text dataset's training sentences,
encoded as the encoder ships (no SimCSE training: ``text.tails``). The POT scores are the
distinct pairs of the link bank's first views, so the bank is encoded once (≈ 72 s for the
paper's 32 × 256 on 2 cores, the fits ≈ 57 s; measured).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from infonce_lab.io import write_json_atomic
from infonce_lab.params import Params
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.diagnose import diagnose_banks
from infonce_lab.tails.banks import link_bank_from, pot_pairs_from


def text_diagnose(params: Params, encoder: str) -> dict[str, Any]:
    from infonce_lab.data.text import load_text_raw
    from infonce_lab.data.text_views import bank_views
    from infonce_lab.models.text import (
        build_sentence_encoder,
        encode,
        load_tokenizer,
        use_offline_hub_if_local,
    )

    cfg = params.text.tails
    if encoder not in cfg.encoders:
        raise ValueError(f"text.tails.encoders does not list '{encoder}' in params.yaml")
    enc_cfg = params.text.encoders[encoder]
    use_offline_hub_if_local([enc_cfg])
    corpus = load_text_raw(paths.text_raw_dir(cfg.dataset))
    texts, chosen = bank_views(corpus.train, cfg.batches, cfg.batch_size, cfg.crop,
                               cfg.word_dropout, cfg.seed)  # before the model: bad sizes fail fast
    torch.set_num_threads(params.text.training.threads)
    model = build_sentence_encoder(enc_cfg, cfg.seed).eval()  # h never passes the MLP
    with torch.no_grad():
        z = encode(model, load_tokenizer(enc_cfg), texts, max_length=cfg.max_length,
                   batch_size=cfg.batch_encode)
    b = cfg.batch_size
    bank = link_bank_from(z, chosen)
    first = np.concatenate([z[2 * b * k:2 * b * k + b] for k in range(cfg.batches)])
    metrics, _ = diagnose_banks(bank, pot_pairs_from(first, chosen), params.tails)
    metrics["bank"]["batches"] = cfg.batches
    metrics["views"] = {
        "positive_top1_share": float((bank.scores[:, 0] > bank.scores[:, 1:].max(axis=1)).mean()),
        "mean_words": float(np.mean([len(t.split()) for t in texts])),
        "crop": list(cfg.crop), "word_dropout": cfg.word_dropout}
    out = {"encoder": encoder, "dataset": cfg.dataset, "source": enc_cfg.source,
           "metrics": metrics}
    write_json_atomic(paths.text_tails(encoder), out)
    pot, link = metrics["pot"], metrics["link"][params.tails.link.placements[0]]
    return {"encoder": encoder, "xi": pot["xi"], "lambda_hat": link["lambda_hat"],
            "delta_mean": link["delta_mean"],
            "positive_top1_share": metrics["views"]["positive_top1_share"]}
