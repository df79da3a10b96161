"""Datasets: a registry of loaders that materialise ``data/raw/<dataset>/`` with a checksum manifest."""

from infonce_lab.data.datasets import (
    DATASETS,
    LabelledSplits,
    load_raw,
    materialise,
    verify_manifest,
)

__all__ = ["DATASETS", "LabelledSplits", "load_raw", "materialise", "verify_manifest"]
