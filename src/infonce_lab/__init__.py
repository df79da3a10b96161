"""InfoNCE Lab: a reproducible pipeline for studying contrastive representation learning."""

__version__ = "0.1.0"
