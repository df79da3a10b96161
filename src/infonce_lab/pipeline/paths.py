"""Where each stage's files live, in one place (dvc.yaml's outs and deps spell the same paths).

Per-run files sit under a folder per dataset, so a stage that works on every run of a dataset at
once (evaluate, text_evaluate) can depend on that one folder and write one folder. A model's and
its telemetry's folder is ``<configuration>/<run>``: one pretrain stage instance trains every seed
of a configuration and replaces that configuration's folder.
"""

from __future__ import annotations

from pathlib import Path

from infonce_lab.params import Configuration, Run, RunId, TextRun

RAW = Path("data/raw")
MODELS = Path("models")
FEATURES = Path("data/features")
METRICS = Path("reports/metrics")


def raw_dir(dataset: str) -> Path:
    return RAW / dataset


def text_raw_dir(dataset: str) -> Path:
    return RAW / "text" / dataset


def text_tokens_dir(dataset: str, encoder: str) -> Path:
    """The training sentences of ``dataset`` tokenised by ``encoder``'s tokenizer."""
    return Path("data/tokens/text") / dataset / encoder


TRAIN = Path("reports/train")
TEXT_TRAIN = Path("reports/text/train")


def in_configuration(run_id: str) -> Path:
    """``<configuration>/<run>``, where a run's model and telemetry sit below their roots."""
    return Path(RunId.parse(run_id).config.to_str()) / run_id


def configuration_model_dir(config: Configuration, text: bool = False) -> Path:
    return MODELS / ("text" if text else "vision") / config.dataset / config.to_str()


def model_dir(run: Run) -> Path:
    return MODELS / "vision" / run.dataset / in_configuration(run.id)


def text_model_dir(run: TextRun) -> Path:
    return MODELS / "text" / run.dataset / in_configuration(run.id)


def features_dir(dataset: str) -> Path:
    """The evaluate stage's output: one sub-folder of frozen features per run."""
    return FEATURES / "vision" / dataset


def text_features_dir(dataset: str) -> Path:
    return FEATURES / "text" / dataset


def run_metrics_dir(dataset: str) -> Path:
    """The evaluate stage's metrics: one <run>.json per run of the dataset."""
    return METRICS / "runs" / dataset


def baseline_metrics(dataset: str) -> Path:
    return METRICS / "baselines" / f"{dataset}.json"


def text_run_metrics_dir(dataset: str) -> Path:
    return METRICS / "text" / "runs" / dataset


def text_baseline_metrics(dataset: str) -> Path:
    return METRICS / "text" / "baselines" / f"{dataset}.json"


TAILS = Path("reports/tails")


def tails_metrics_dir(dataset: str) -> Path:
    """The diagnose stage's metrics: one <run>.json per run of the dataset."""
    return TAILS / "runs" / dataset


def tails_plots_dir(dataset: str) -> Path:
    return TAILS / "plots" / dataset


def noise_floor() -> Path:
    return TAILS / "noise_floor.json"


def step_cost() -> Path:
    return Path("reports/step_cost.json")


def sim_result(experiment: str) -> Path:
    return Path("reports/sims") / f"{experiment}.json"


def text_tails(dataset: str) -> Path:
    """The text_evaluate stage's tail diagnostics of packaged encoders, {encoder: record}."""
    return TAILS / "text" / f"{dataset}.json"


def params_check() -> Path:
    """The check_params stage's marker: every stage of the DAG runs after it."""
    return Path("reports/params_check.json")
