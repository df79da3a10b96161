"""kNN on cosine similarity, streamed over query chunks so memory stays bounded.

scikit-learn's NearestNeighbors with the cosine metric materialises the full distance matrix per
chunk in float64 and sorts it; a float32 matmul followed by ``torch.topk`` per chunk does the same
job with O(chunk · bank) memory and is faster (``knn.sklearn_over_ours`` in reports/bench.json).

faiss-cpu's exact inner-product search (``IndexFlatIP``) returns the same neighbours somewhat
faster (measured when this was chosen; ``make bench`` times scikit-learn, not faiss), but it is not
used: a search on the default study's
splits (1,100 × 450, 64-d, k = 50) takes ≈ 10 ms here, against ≈ 0.8 s of evaluate work per run;
faiss would be one more compiled dependency (its own BLAS and threads) for that; and its tie order
between equal similarities is not torch.topk's, so the kNN figures of a run would differ by
backend.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def topk_cosine(
    bank: torch.Tensor, queries: torch.Tensor, k: int, chunk: int = 4096
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``k`` cosine similarities and bank indices for each query, in descending order."""
    if k > bank.shape[0]:
        raise ValueError(f"k = {k} exceeds the bank size {bank.shape[0]}")
    bank = F.normalize(bank.float(), dim=1)
    sims, idx = [], []
    for start in range(0, queries.shape[0], chunk):
        q = F.normalize(queries[start : start + chunk].float(), dim=1)
        s, i = torch.topk(q @ bank.T, k, dim=1)
        sims.append(s)
        idx.append(i)
    return torch.cat(sims), torch.cat(idx)


def knn_accuracy(
    bank: torch.Tensor | np.ndarray,
    bank_labels: torch.Tensor | np.ndarray,
    queries: torch.Tensor | np.ndarray,
    query_labels: torch.Tensor | np.ndarray,
    k: int = 50,
    temperature: float = 0.1,
) -> float:
    """Weighted kNN: each of the top-k neighbours votes for its class with exp((s − s_max)/T)."""
    bank, queries = torch.as_tensor(bank), torch.as_tensor(queries)
    bank_labels = torch.as_tensor(bank_labels).long()
    query_labels = torch.as_tensor(query_labels).long()
    s, i = topk_cosine(bank, queries, k)
    w = torch.exp((s - s[:, :1]) / temperature)
    n_classes = int(max(bank_labels.max(), query_labels.max())) + 1
    votes = torch.zeros(queries.shape[0], n_classes, dtype=w.dtype)
    votes.scatter_add_(1, bank_labels[i], w)
    return float((votes.argmax(dim=1) == query_labels).float().mean())


def knn_recall(
    bank: torch.Tensor | np.ndarray,
    bank_labels: torch.Tensor | np.ndarray,
    queries: torch.Tensor | np.ndarray,
    query_labels: torch.Tensor | np.ndarray,
    ks: tuple[int, ...] | list[int] = (1, 2, 5, 10, 20, 50),
) -> dict[int, float]:
    """Recall@k: the share of queries with at least one same-label item among their top k."""
    bank, queries = torch.as_tensor(bank), torch.as_tensor(queries)
    bank_labels = torch.as_tensor(bank_labels).long()
    query_labels = torch.as_tensor(query_labels).long()
    _, idx = topk_cosine(bank, queries, max(ks))
    hit = bank_labels[idx] == query_labels.unsqueeze(1)  # (q, kmax), ordered by similarity
    first = torch.where(hit.any(1), hit.float().argmax(1), torch.full_like(query_labels, max(ks)))
    return {k: float((first < k).float().mean()) for k in ks}
