"""Where a process's rows sit in the global batch: the one fact the augmentations need to draw
for the whole batch (DDP), in a module of its own so the training loop imports no augmentation."""

from __future__ import annotations

from typing import NamedTuple


class BatchPart(NamedTuple):
    """The images given are rows ``offset …`` of a batch of ``total``: every random draw is made
    for the whole batch and the images get their rows' draws. A DDP rank's share of the global
    batch then sees exactly the views one process would make of that batch, and the ranks' views
    are not copies of each other (each rank's generator is in the same state: drawing for its own
    rows alone would give rank r's k-th image rank 0's k-th augmentation)."""

    offset: int
    total: int

    def rows(self, n: int) -> slice:
        if self.offset < 0 or self.offset + n > self.total:
            raise ValueError(f"rows {self.offset}…{self.offset + n} are not in a batch of "
                             f"{self.total}")
        return slice(self.offset, self.offset + n)
