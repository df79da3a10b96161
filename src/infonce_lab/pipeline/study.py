"""The runs of the study on one dataset, for the stages that take a whole dataset at once."""

from __future__ import annotations

from infonce_lab.params import Params, Run, TextRun


def dataset_runs(params: Params, dataset: str, *, primary: bool = True) -> list[Run]:
    """Every image run on ``dataset``: the grid, then the primary block unless ``primary`` is
    False; a dataset outside the study is an error."""
    if dataset not in params.study.datasets:
        raise ValueError(f"dataset {dataset!r} is not in study.datasets {params.study.datasets}")
    runs = params.runs() if primary else params.grid_runs()
    return [r for r in runs if r.dataset == dataset]


def dataset_text_runs(params: Params, dataset: str) -> list[TextRun]:
    """Every text run of the study on ``dataset``; a dataset outside it is an error."""
    datasets = params.text.study.datasets
    if dataset not in datasets:
        raise ValueError(f"dataset {dataset!r} is not in text.study.datasets {datasets}")
    return [r for r in params.text_runs() if r.dataset == dataset]


