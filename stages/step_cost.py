"""step_cost: the WEINCE paper's "Computational overhead" (§3) on this machine — the loss stage's
share of a ResNet-18 training step at the paper's shapes, and the full step with each loss —
into reports/step_cost.json. It depends on no run."""

from __future__ import annotations

from infonce_lab.stage import params_or_exit, stage, stage_app

app = stage_app()


@app.command(help=__doc__)
@stage
def main() -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.step_cost import measure_step_cost

    r = measure_step_cost(params)
    cfg = params.step_cost
    share = r["share"][cfg.treatment]
    print(f"{cfg.treatment}'s loss stage: {share['value']:.2%} of its step "
          f"[{share['low']:.2%}, {share['high']:.2%}]; step {cfg.treatment}/{cfg.reference} "
          f"{r['step_ratio']['value']:.3f}, loss stage {r['loss_ratio']['value']:.2f}×")


if __name__ == "__main__":
    app()
