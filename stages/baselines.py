"""baselines: randomly initialised encoders (one per backbone × seed) and raw pixels, evaluated
exactly as the trained runs, into reports/metrics/baselines/<dataset>.json."""

from __future__ import annotations

from pathlib import Path

import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.data import load_raw
from infonce_lab.evaluation.protocol import check_knn_k, evaluate_features
from infonce_lab.features import augmented_view_pairs
from infonce_lab.io import write_json_atomic
from infonce_lab.training import extract_features, init_encoder

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str = typer.Option(...)) -> None:
    params = params_or_exit()
    torch.set_num_threads(params.training.threads)
    data = load_raw(Path("data/raw") / dataset)
    check_knn_k(data.train_y, params.evaluation)
    encoders: dict[str, dict] = {}
    v1, v2 = augmented_view_pairs(data.test_x, params.datasets[dataset].augment,
                                  params.evaluation.view_seed)
    if "raw_pixels" in params.study.baselines:
        def flat(a):  # noqa: ANN001, ANN202
            # uint8 datasets: the same [0, 1] scale the encoders see
            a = a.astype("float32") / 255.0 if a.dtype == "uint8" else a
            return a.reshape(len(a), -1)

        m = evaluate_features(flat(data.train_x), data.train_y, flat(data.test_x), data.test_y,
                              params.evaluation, (flat(v1), flat(v2)))
        encoders["raw_pixels"] = {"encoder": {"kind": "raw_pixels", "dataset": dataset}, **m}
    if "random_init" in params.study.baselines:
        for backbone in params.study.backbones:
            for seed in params.study.seeds:
                enc = init_encoder(params.backbones[backbone], data.train_x.shape[1], seed,
                                   int(data.train_x.shape[-1])).eval()
                h_tr, _ = extract_features(enc, data.train_x, params.evaluation.batch_size)
                h_te, _ = extract_features(enc, data.test_x, params.evaluation.batch_size)
                views = (extract_features(enc, v1, params.evaluation.batch_size)[0],
                         extract_features(enc, v2, params.evaluation.batch_size)[0])
                m = evaluate_features(h_tr, data.train_y, h_te, data.test_y, params.evaluation,
                                      views)
                encoders[f"random_init-{backbone}-{seed}"] = {
                    "encoder": {"kind": "random_init", "dataset": dataset, "backbone": backbone,
                                "seed": seed}, **m}
    write_json_atomic(Path("reports/metrics/baselines") / f"{dataset}.json", encoders)
    for name, m in encoders.items():
        print(f"{dataset}/{name}: linear test {m['linear']['test_acc']:.4f}")


if __name__ == "__main__":
    app()
