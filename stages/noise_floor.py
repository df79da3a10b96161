"""noise_floor: the synthetic estimation experiment of WEINCE App. C.1 (Fig. 5) into
reports/tails/noise_floor.json, every MSE with its interval over the replicates. It does not
depend on any run."""

from __future__ import annotations

from infonce_lab.io import write_json_atomic
from infonce_lab.pipeline import paths
from infonce_lab.stage import params_or_exit, stage, stage_app

app = stage_app()


@app.command(help=__doc__)
@stage
def main() -> None:
    cfg = params_or_exit().tails.noise_floor
    from infonce_lab.tails.noise_floor import noise_floor

    result = noise_floor(scores=tuple(cfg.scores), beta=cfg.beta, ns=tuple(cfg.ns),
                         replicates=cfg.replicates, seed=cfg.seed)
    write_json_atomic(paths.noise_floor(), {"params": cfg.model_dump(), **result})
    n = str(max(cfg.ns))
    ratio_w = result["estimates"]["weibit_n_mse_over_c"][n]["value"]
    ratio_s = result["estimates"]["softmax_mse_over_floor"][n]["value"]
    print(f"noise floor at n = {n}: Weibit n·MSE/c = {ratio_w}, softmax MSE/floor = {ratio_s} "
          f"(floor {result['softmax_floor']:.4f})")


if __name__ == "__main__":
    app()
