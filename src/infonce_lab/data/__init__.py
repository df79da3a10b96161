"""Datasets: one reader per kind (``data.readers.READERS``) materialises ``data/raw/<dataset>/``
with a checksum manifest that every later stage checks (``data.splits``)."""

from infonce_lab.data.readers import READERS, materialise
from infonce_lab.data.splits import LabelledSplits, load_raw, verify_manifest

__all__ = ["READERS", "LabelledSplits", "load_raw", "materialise", "verify_manifest"]
