"""The image batch source: two augmented views of each image, made on the training device in one
batched call (no PIL, no worker processes); the train set stays uint8 there when it fits. It owns
the random stream of its epoch orders and views and hands it to the resume checkpoint, so a
resumed run draws what the uninterrupted one would have. Given the images' labels it also hands
a batch's classes to a loss that reads them (the label oracle); reading them draws nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from infonce_lab.data.batch_part import BatchPart
from infonce_lab.data.views import make_views
from infonce_lab.params import AugmentConfig
from infonce_lab.train.checkpointing import rng_state, set_rng_state


def _on_device(x_train: np.ndarray, device: torch.device) -> torch.Tensor:
    """The train set on the training device when it fits in a quarter of free memory (uint8 stays
    uint8); otherwise in pinned host memory, each batch copied over."""
    x = torch.from_numpy(np.ascontiguousarray(x_train))
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return x.to(device) if x.numel() * x.element_size() < free // 4 else x.pin_memory()
    return x if x.dtype == torch.uint8 else x.to(torch.float32)


class ImageViews:
    """``y_train``: the images' classes (−1: unlabelled), for a loss that reads them; None (the
    default, and what every loss but the label oracle gets) holds none."""

    def __init__(self, x_train: np.ndarray, augment: AugmentConfig, device: torch.device,
                 seed: int, channels_last: bool = False, y_train: np.ndarray | None = None
                 ) -> None:
        self.x = _on_device(x_train, device)
        self.n, self.augment, self.device = int(self.x.shape[0]), augment, device
        if y_train is not None and len(y_train) != self.n:
            raise ValueError(f"{len(y_train)} labels for {self.n} training images")
        self.y = (None if y_train is None else
                  torch.as_tensor(np.asarray(y_train, dtype=np.int64), device=device))
        self.order_device = device
        self.gen = torch.Generator(device=device).manual_seed(seed)
        self.fmt = torch.channels_last if channels_last else torch.contiguous_format

    def order(self) -> torch.Tensor:
        return torch.randperm(self.n, generator=self.gen, device=self.device)

    def inputs(self, idx: torch.Tensor, part: BatchPart | None = None) -> torch.Tensor:
        x = self.x[idx.to(self.x.device)].to(self.device, non_blocking=True)
        v1, v2 = make_views(x, self.augment, self.gen, part)
        return torch.cat([v1, v2]).contiguous(memory_format=self.fmt)

    def labels(self, idx: torch.Tensor) -> torch.Tensor:
        """The classes of the rows ``idx`` (the batch's pairs, in the order of ``inputs``)."""
        if self.y is None:
            raise ValueError("this batch source was built without the images' labels "
                             "(ImageViews(y_train=...)): the loss reads them")
        return self.y[idx.to(self.y.device)]

    def rng_state(self) -> dict[str, Any]:
        return rng_state(self.gen)

    def set_rng_state(self, state: dict[str, Any]) -> None:
        set_rng_state(state, self.gen)
