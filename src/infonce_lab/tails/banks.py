"""Score banks from a frozen encoder (WEINCE §2.3.1–2.3.2, App. C.2): what the tail diagnostics
are fitted on.

- The **link bank** (§2.3.2): batches of B images, each image in at most one batch, two
  augmented views each; anchor i's candidates
  are the other 2B − 1 views of its batch, with its positive (the other view of its image) put
  at column 0. The same draw also gives every view's embedding and image, from which the
  **pools** for the pool-size ablation (App. D.1) and the gradient-allocation bank (App. C.2) are
  built: negatives drawn across batches, never another view of the anchor's own image.
- The **POT scores** (§2.3.1): batches of K + 1 images, the first view only, the cosines of
  distinct pairs (strictly lower triangle).

The draws come from one seeded generator, so every run and checkpoint is diagnosed on the same
images and augmentations: differences between them are the encoder's, not the sampling's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

Embed = Callable[[torch.Tensor], torch.Tensor]  # a batch of images -> (n, d) embeddings
Augment = Callable[[torch.Tensor, torch.Generator], torch.Tensor]  # one random view per image


@dataclass(frozen=True)
class LinkBank:
    scores: np.ndarray  # (anchors, 2B − 1) cosines, the positive at column 0
    batch: np.ndarray  # (anchors,) batch of each anchor
    z: np.ndarray  # (anchors, d) unit embeddings, one row per view (anchor order)
    image: np.ndarray  # (anchors,) image index of each view


@torch.no_grad()
def _embed_views(embed: Embed, images: torch.Tensor, augment: Augment, chosen: torch.Tensor,
                 gen: torch.Generator, views: int) -> tuple[np.ndarray, np.ndarray]:
    """``views`` augmented views of each row of ``chosen`` (batches, B), embedded batch after
    batch (the first views of its B images, then the second, …): (batches·views·B, d) raw
    embeddings and the (batches, B) images drawn."""
    zs = []
    for row in chosen:
        x = images[row]
        zs.append(embed(torch.cat([augment(x, gen) for _ in range(views)])).numpy())
    return np.concatenate(zs), chosen.numpy()


def _draws(embed: Embed, images: torch.Tensor, augment: Augment, batches: int,
           batch_images: int, gen: torch.Generator, views: int) -> tuple[np.ndarray, np.ndarray]:
    """``batches`` batches of B images, each drawn without replacement within its batch (an image
    may recur in another batch), ``views`` views of each, embedded (:func:`_embed_views`)."""
    if batch_images > len(images):
        raise ValueError(f"a bank batch of {batch_images} images needs at least that many images; "
                         f"the dataset has {len(images)}")
    chosen = torch.stack([torch.randperm(len(images), generator=gen)[:batch_images]
                          for _ in range(batches)])
    return _embed_views(embed, images, augment, chosen, gen, views)


def link_draws(embed: Embed, images: torch.Tensor, augment: Augment, batches: int,
               batch_images: int, gen: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The link bank's draws (two views of each image), embedded. This is the encoder's whole
    part in the bank; the scores follow from it (:func:`link_bank_from`).

    Every image is drawn at most once in the whole bank (one permutation, cut into batches): the
    link test fits on some batches and scores Δ̄ on the others (§2.3.2, App. B.3), and an image in
    both would let the held-out score reward memorised pairs, not a better link."""
    if batches * batch_images > len(images):
        raise ValueError(f"a link bank of {batches} batches of {batch_images} images draws each "
                         f"image once: it needs {batches * batch_images} images, the dataset has "
                         f"{len(images)}")
    chosen = torch.randperm(len(images), generator=gen)[:batches * batch_images]
    return _embed_views(embed, images, augment, chosen.view(batches, batch_images), gen, views=2)


def link_bank_from(z_raw: np.ndarray, chosen: np.ndarray) -> LinkBank:
    """The link bank of WEINCE §2.3.2 from :func:`link_draws`' embeddings."""
    batches, b = chosen.shape
    rows, batch_ids, zs, image_ids = [], [], [], []
    # Column order for anchor a: its positive, then the other views of the batch in order.
    idx = torch.arange(2 * b)
    pos = (idx + b) % (2 * b)
    others = torch.stack([idx[(idx != a) & (idx != pos[a])] for a in range(2 * b)])
    cols = torch.cat([pos[:, None], others], dim=1)
    for k in range(batches):
        z = F.normalize(torch.from_numpy(z_raw[2 * b * k:2 * b * (k + 1)]).double(), dim=1)
        sim = z @ z.T
        rows.append(sim.gather(1, cols).numpy())
        batch_ids.append(np.full(2 * b, k))
        zs.append(z.numpy())
        image_ids.append(np.concatenate([chosen[k], chosen[k]]))
    return LinkBank(scores=np.concatenate(rows), batch=np.concatenate(batch_ids),
                    z=np.concatenate(zs), image=np.concatenate(image_ids))


def pool_order(image: np.ndarray, size: int, seed: int) -> np.ndarray:
    """(anchors, size) view indices per anchor, excluding every view of the anchor's own image:
    a window at a random offset of one random permutation of the views, which is a uniformly
    random subset for each anchor (and in random order, so the first m columns are a pool of m).
    The window is over-drawn by the most views any image has, then those of the anchor's image
    are dropped; O(anchors × size), where sorting random keys would be O(anchors²·log)."""
    n = len(image)
    _, counts = np.unique(image, return_counts=True)
    spare = int(counts.max())
    if size + spare > n:
        raise ValueError(f"a pool of {size} negatives needs more views of other images than the "
                         f"bank's {n} views provide (raise the bank's batches)")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    offsets = rng.integers(0, n, size=n)
    window = perm[(offsets[:, None] + np.arange(size + spare)[None, :]) % n]
    same = image[window] == image[:, None]
    keep = np.argsort(same, axis=1, kind="stable")[:, :size]  # others first, order kept
    return np.take_along_axis(window, keep, axis=1)


GRAM_CHUNK_ELEMENTS = 1 << 24  # 128 MiB of float64 per block of rows of the Gram matrix


def pool_scores(bank: LinkBank, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each anchor's positive score and its pool's scores (anchors, pool), in pool order.

    The Gram matrix is formed a block of rows at a time: a pool needs (anchors, pool) of it, not
    the whole, and numpy's bundled OpenBLAS (built with a small GEMM buffer) segfaults on the
    whole 16,384² product of the paper's 32 × 256 bank on 2 threads (measured here; OpenBLAS
    #3135). A bank of at most 2^24 / n anchors is one block, the plain product."""
    n = len(bank.z)
    step = max(1, GRAM_CHUNK_ELEMENTS // n)
    pool = np.empty(order.shape, dtype=bank.z.dtype)
    for a in range(0, n, step):
        pool[a:a + step] = np.take_along_axis(bank.z[a:a + step] @ bank.z.T, order[a:a + step],
                                              axis=1)
    return bank.scores[:, 0], pool


@dataclass(frozen=True)
class PotScores:
    scores: np.ndarray  # (pairs,) cosines of distinct pairs of first views
    image_a: np.ndarray  # (pairs,) image index of each pair's two views
    image_b: np.ndarray


def pot_draws(embed: Embed, images: torch.Tensor, augment: Augment, repeats: int,
              batch_images: int, gen: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The POT bank's draws (first views only), embedded (:func:`pot_pairs_from` scores them)."""
    return _draws(embed, images, augment, repeats, batch_images, gen, views=1)


def pot_pairs_from(z_raw: np.ndarray, chosen: np.ndarray) -> PotScores:
    """WEINCE §2.3.1 (Fig. 3): cosines of distinct pairs among first views, the batches pooled,
    with the two images of every pair (the clusters of the POT bootstrap: an image drawn in
    several batches, and every pair it is in, share it)."""
    repeats, b = chosen.shape
    tri = torch.tril_indices(b, b, offset=-1)
    out, ia, ib = [], [], []
    for k in range(repeats):
        z = F.normalize(torch.from_numpy(z_raw[b * k:b * (k + 1)]).double(), dim=1)
        out.append((z @ z.T)[tri[0], tri[1]].numpy())
        ia.append(chosen[k][tri[0].numpy()])
        ib.append(chosen[k][tri[1].numpy()])
    return PotScores(np.concatenate(out), np.concatenate(ia), np.concatenate(ib))


