"""The text batch source of unsupervised SimCSE (Gao et al. 2021, §3): each sentence twice, and
the encoder's dropout is the only augmentation. It owns the random stream of its epoch orders
(dropout draws from torch's global generator) and hands both to the resume checkpoint."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

from infonce_lab.models.text import tokenize
from infonce_lab.train.checkpointing import rng_state, set_rng_state


class SentencePairs:
    def __init__(self, sentences: list[str], tokenizer: Any, max_length: int,
                 device: torch.device, seed: int) -> None:
        self.sentences, self.tokenizer, self.max_length = sentences, tokenizer, max_length
        self.n, self.device, self.order_device = len(sentences), device, torch.device("cpu")
        self.rng = np.random.default_rng(seed)

    def order(self) -> torch.Tensor:
        return torch.from_numpy(self.rng.permutation(self.n))

    def inputs(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        batch = [self.sentences[i] for i in idx.tolist()]
        return tokenize(self.tokenizer, batch + batch, self.max_length, self.device)

    def rng_state(self) -> dict[str, Any]:
        # The generator's state holds 128-bit integers; as JSON text it loads with weights_only.
        return {**rng_state(), "order": json.dumps(self.rng.bit_generator.state)}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        set_rng_state(state)
        self.rng.bit_generator.state = json.loads(state["order"])
