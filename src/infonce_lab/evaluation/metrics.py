"""Every per-encoder metric the study reports, declared once.

A metric's name is its dotted key in the per-run metrics files (``<section>.<key>``, as the
image and text evaluation protocols write them); the aggregate stage and
the report derive their lists from the flags here, so a metric added here is compared, tabled
and selected everywhere it says, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    label: str                       # in sentences and legends
    short: str = ""                  # as a table column (the label when empty)
    title: str = ""                  # as a figure panel's title
    higher_is_better: bool = True
    compared: bool = False           # paired comparisons between configurations (aggregate)
    headline: bool = False           # gains over random init, the alignment–uniformity fit, figures
    selected_on: str | None = None   # the validation metric a selection reads for this test metric
    table: bool = False              # a column of the report's per-configuration table
    text: bool = False               # summarised over seeds for the text study too

    @property
    def column(self) -> str:
        return self.short or self.label


METRICS: tuple[Metric, ...] = (
    Metric("sts.test_spearman", "STS Spearman (test)", text=True),
    Metric("sts.val_spearman", "STS Spearman (validation)", text=True),
    Metric("linear.test_acc", "linear probe", short="linear",
           title="Linear probe — test accuracy", compared=True, headline=True,
           selected_on="linear.val_acc", table=True, text=True),
    Metric("linear.val_acc", "linear probe (validation)", text=True),
    Metric("knn.test_acc", "kNN", short="kNN acc.", title="Weighted kNN — test accuracy",
           compared=True, headline=True, selected_on="knn.val_acc", table=True, text=True),
    Metric("knn.val_acc", "kNN (validation)", text=True),
    # Recall@k at every k of evaluation.recall_ks is summarised (and selected on its own val_
    # column); WEINCE's Table 3 reports R@1, 2, 5, 10, 20, 50 (Table 7: R@50), so each is compared
    # (a k that evaluation.recall_ks leaves out is simply absent); three are table columns.
    Metric("knn.test_recall_at_1", "kNN recall@1", short="R@1", compared=True, table=True),
    Metric("knn.test_recall_at_2", "kNN recall@2", short="R@2", compared=True),
    Metric("knn.test_recall_at_5", "kNN recall@5", short="R@5", compared=True, table=True),
    Metric("knn.test_recall_at_10", "kNN recall@10", short="R@10", compared=True),
    Metric("knn.test_recall_at_20", "kNN recall@20", short="R@20", compared=True),
    Metric("knn.test_recall_at_50", "kNN recall@50", short="R@50", compared=True, table=True),
    # evaluation.few_labels: a handful of labels per class, where the full-label task saturates
    Metric("few.probe_test_acc", "few-label linear probe", short="few-label linear",
           compared=True, table=True),
    Metric("few.knn_test_acc", "few-label kNN", short="few-label kNN", compared=True, table=True),
    Metric("geometry.alignment", "alignment", higher_is_better=False, table=True, text=True),
    Metric("geometry.uniformity", "uniformity", higher_is_better=False, table=True, text=True),
    # The same two on the projector's output z, where the losses act (Wang & Isola measure the
    # loss's own normalised output); the probes read h.
    Metric("geometry_z.alignment", "alignment of z", short="align. z", higher_is_better=False,
           table=True),
    Metric("geometry_z.uniformity", "uniformity of z", short="unif. z", higher_is_better=False,
           table=True),
    Metric("geometry.effective_rank", "effective rank", short="eff. rank", table=True,
           text=True),
    # The loss's own statistics averaged over every training step (WEINCE: λ̄ and its effective
    # inverse temperature κ̄, which the training loop averages over every step).
    Metric("train.inv_tau_eff_mean", "mean effective inverse temperature κ̄", text=True),
    Metric("train.lambda_mean", "mean mixing weight λ̄", text=True),
)
BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}


def names(**flags: bool) -> tuple[str, ...]:
    """The names of the metrics whose flags all have the given values, in declaration order."""
    return tuple(m.name for m in METRICS if all(getattr(m, k) == v for k, v in flags.items()))


def labels(**flags: bool) -> dict[str, str]:
    return {m.name: m.label for m in METRICS if all(getattr(m, k) == v for k, v in flags.items())}
