"""The text batch source of unsupervised SimCSE (Gao et al. 2021, §3): each sentence twice, and
the encoder's dropout is the only augmentation. It owns the random stream of its epoch orders
(dropout draws from torch's global generator) and hands both to the resume checkpoint.

It reads the corpus tokenised once (``data/text_tokens.py``) and pads each batch with the
tokenizer's ``pad``. The rows are read as Python lists, not through ``with_format("torch")``:
measured here on the offline corpus (B = 64, max length 32, median of 200 interleaved batches),
lists + ``pad`` 6.3 ms, the torch format + ``pad`` 15.3 ms, tokenising the texts 25.1 ms — the
same tensors from all three."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from infonce_lab.train.checkpointing import rng_state, set_rng_state

if TYPE_CHECKING:
    from datasets import Dataset

    from infonce_lab.data.batch_part import BatchPart


class SentencePairs:
    def __init__(self, tokens: Dataset, tokenizer: Any, device: torch.device, seed: int) -> None:
        self.tokens, self.tokenizer = tokens, tokenizer
        self.n, self.device, self.order_device = len(tokens), device, torch.device("cpu")
        self.rng = np.random.default_rng(seed)

    def order(self) -> torch.Tensor:
        return torch.from_numpy(self.rng.permutation(self.n))

    def inputs(self, idx: torch.Tensor, part: BatchPart | None = None) -> dict[str, torch.Tensor]:
        # ``part`` changes nothing: a pair's only randomness is dropout, drawn in the forward.
        rows = self.tokens[idx.tolist()]
        batch = self.tokenizer.pad({k: v + v for k, v in rows.items()}, return_tensors="pt")
        return {k: v.to(self.device) for k, v in batch.items()}

    def rng_state(self) -> dict[str, Any]:
        # The generator's state holds 128-bit integers; as JSON text it loads with weights_only.
        return {**rng_state(), "order": json.dumps(self.rng.bit_generator.state)}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        set_rng_state(state)
        self.rng.bit_generator.state = json.loads(state["order"])
