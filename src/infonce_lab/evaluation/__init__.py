"""Evaluation on frozen features: linear probe (probe.py), kNN (knn.py), geometry (geometry.py),
statistics over seeds and encoders (stats.py). Import the submodule you need: the package
itself imports nothing, so the statistics do not pull in torch (≈ 2 s per stage start)."""
