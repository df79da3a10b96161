"""Alignment and uniformity as evaluation metrics: the same functions the DirectAU loss uses."""

from infonce_lab.losses.geometry import alignment, uniformity, unit_rows

__all__ = ["alignment", "uniformity", "unit_rows"]
