"""The evaluate stage for one image dataset: every run of the study on it, then the baselines.

Each run's frozen features are extracted once (``pipeline/extract.py``: the splits from its final
weights; for a diagnosed run, the tail banks' embeddings from every kept checkpoint) into
``features_dir(dataset)/<run>/``
and the splits are scored by the linear probe, weighted kNN and the
alignment/uniformity geometry into ``run_metrics_dir(dataset)/<run>.json``. The baselines (randomly initialised
encoders, one per backbone × seed, and raw pixels) go through the same protocol into
``baseline_metrics(dataset)``.

One process for the whole dataset, not one stage per run: on digits a run's extraction and
scoring take ≈ 2.5 s against ≈ 7 s of process start and DVC bookkeeping per stage (measured
from reports/timings/). Outputs are replaced as whole folders once every run has been scored.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from infonce_lab.data import load_raw
from infonce_lab.io import replaced_together
from infonce_lab.models.build import init_encoder
from infonce_lab.params import Params
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.extract import (
    Views,
    augmented_view_pairs,
    check_banks,
    encode_splits,
    extract_run,
)
from infonce_lab.pipeline.protocol import check_evaluation, evaluate_features
from infonce_lab.pipeline.study import dataset_runs
from infonce_lab.train.runtime import resolve_device


def _score(f: dict[str, np.ndarray], data: Any, ecfg: Any) -> dict[str, Any]:
    return evaluate_features(f["train_h"], data.train_y, f["test_h"], data.test_y, ecfg,
                             (f["view1_h"], f["view2_h"]),
                             (f["test_z"], f["view1_z"], f["view2_z"]))


def evaluate_dataset(params: Params, dataset: str) -> None:
    runs = dataset_runs(params, dataset)
    torch.set_num_threads(params.training.threads)
    device = resolve_device(params.training.device)
    data = load_raw(paths.raw_dir(dataset))
    check_evaluation(data.train_y, params.evaluation)  # bad params fail before any compute
    for run in runs:  # every model there before any work
        if not (paths.model_dir(run) / "model.pt").is_file():
            raise FileNotFoundError(f"{paths.model_dir(run) / 'model.pt'}: no trained model; run "
                                    f"the pretrain stage for {run.id}")
    check_banks(params.tails, len(data.train_x), dataset)
    ecfg = params.evaluation
    v1, v2 = augmented_view_pairs(data.test_x, params.datasets[dataset].augment, ecfg.view_seed)
    diagnosed = {r.id for r in params.diagnosed_runs()}
    records: dict[str, dict[str, Any]] = {}
    with replaced_together() as outputs:
        feats = outputs.dir(paths.features_dir(dataset))
        for run in runs:
            out = feats / run.id
            out.mkdir()
            f = extract_run(paths.model_dir(run), out, data, (v1, v2), params, run, device,
                            banks=run.id in diagnosed)
            metrics = _score(f, data, ecfg)
            records[run.id] = {"encoder": {"kind": "trained", **run.model_dump()}, **metrics}
            print(f"{run.id}: features h {f['train_h'].shape[1]}-d, z {f['train_z'].shape[1]}-d; linear "
                  f"test {metrics['linear']['test_acc']:.4f}, kNN test "
                  f"{metrics['knn']['test_acc']:.4f}")
        base = baselines(params, dataset, data, (v1, v2))
        outputs.json_dir(paths.run_metrics_dir(dataset), records)
        outputs.json(paths.baseline_metrics(dataset), base)
    for name, m in base.items():
        print(f"{dataset}/{name}: linear test {m['linear']['test_acc']:.4f}")


def _flat(a: np.ndarray) -> np.ndarray:
    a = a.astype("float32") / 255.0 if a.dtype == "uint8" else a  # the scale the encoders see
    return a.reshape(len(a), -1)


def baselines(params: Params, dataset: str, data: Any,
               views: Views) -> dict[str, dict[str, Any]]:
    """Raw pixels and the random-init encoders (each run's own starting point, backbone × seed),
    evaluated exactly as the trained runs."""
    ecfg, bs = params.evaluation, params.evaluation.batch_size
    out: dict[str, dict[str, Any]] = {}
    if "raw_pixels" in params.study.baselines:
        m = evaluate_features(_flat(data.train_x), data.train_y, _flat(data.test_x), data.test_y,
                              ecfg, (_flat(views[0]), _flat(views[1])))
        out["raw_pixels"] = {"encoder": {"kind": "raw_pixels", "dataset": dataset}, **m}
    if "random_init" in params.study.baselines:
        for backbone in params.study.backbones:
            for seed in params.study.seeds:
                enc = init_encoder(params.backbones[backbone], data.train_x.shape[1], seed,
                                   int(data.train_x.shape[-1])).eval()
                m = _score(encode_splits(enc, data, views, bs), data, ecfg)
                out[f"random_init-{backbone}-{seed}"] = {
                    "encoder": {"kind": "random_init", "dataset": dataset, "backbone": backbone,
                                "seed": seed}, **m}
    return out
