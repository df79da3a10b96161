"""The tail diagnostics of packaged sentence encoders as they ship (``text.tails``), run by the
text_evaluate stage for each text dataset: the image runs' diagnostics (WEINCE §2.3: POT, the
softmax-vs-Weibull link test with its ablations, gradient allocation, the repulsion shares) on a
bank of word-crop views of the dataset's training sentences. No SimCSE training is involved. The
POT scores are the distinct pairs of the link bank's first views, so the bank is encoded once
(≈ 72 s for the paper's 32 × 256 on 2 cores, the fits ≈ 57 s, MiniLM; measured).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from infonce_lab.params import Params
from infonce_lab.pipeline.diagnose import diagnose_banks
from infonce_lab.tails.banks import link_bank_from, pot_pairs_from


def text_tails(params: Params, sentences: list[str], dataset: str) -> dict[str, Any]:
    """{encoder: its record} for every encoder of ``text.tails.encoders`` ({} for none)."""
    from infonce_lab.data.text_views import bank_views
    from infonce_lab.models.text import build_sentence_encoder, encode, load_tokenizer

    cfg = params.text.tails
    if not cfg.encoders:
        return {}
    texts, chosen = bank_views(sentences, cfg.batches, cfg.batch_size, cfg.crop,
                               cfg.word_dropout, cfg.seed)
    out = {}
    for name in cfg.encoders:
        enc_cfg = params.text.encoders[name]
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
            "positive_top1_share": float((bank.scores[:, 0]
                                          > bank.scores[:, 1:].max(axis=1)).mean()),
            "mean_words": float(np.mean([len(t.split()) for t in texts])),
            "crop": list(cfg.crop), "word_dropout": cfg.word_dropout}
        out[name] = {"encoder": name, "dataset": dataset, "source": enc_cfg.source,
                     "metrics": metrics}
        pot, link = metrics["pot"], metrics["link"][params.tails.link.placements[0]]
        print(f"{dataset}/{name} tails: xi {pot['xi']:+.3f}, lambda {link['lambda_hat']:.3f}, "
              f"delta {link['delta_mean']:+.4f}, positive top-1 "
              f"{metrics['views']['positive_top1_share']:.3f}")
    return out
