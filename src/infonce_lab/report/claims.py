"""The WEINCE paper's accuracy claims (SPECS C.1–C.2, Tables 2–3) beside our paired comparisons.

Every configuration of the study that trains both an InfoNCE-kind and a WEINCE-kind loss at the
same dataset × backbone × schedule gives one row per metric, from the aggregate stage's paired
comparison over seeds (WEINCE − InfoNCE). The paper's own settings are listed too: with their
numbers when the study ran them, otherwise "not run" and what it takes.
"""

from __future__ import annotations

from typing import Any

from infonce_lab.report._legacy import NOT_REPRODUCED, REPRODUCED, inconclusive
from infonce_lab.report.paired import loss_kind_differences

# (dataset kind, backbone, metric): (InfoNCE, WEINCE, gain) — None where SPECS says UNKNOWN.
PAPER_ROWS: list[dict[str, Any]] = [
    {"dataset": "cifar100", "backbone": "resnet18", "metric": "linear.test_acc",
     "infonce": 50.01, "weince": 53.28, "gain": 3.27, "source": "Table 2"},
    {"dataset": "cifar100", "backbone": "resnet50", "metric": "linear.test_acc",
     "infonce": None, "weince": None, "gain": 4.82, "source": "Table 2"},
    {"dataset": "tiny_imagenet", "backbone": "vit_small", "metric": "linear.test_acc",
     "infonce": None, "weince": None, "gain": 3.41, "source": "Table 2"},
    {"dataset": "cifar100", "backbone": "resnet18", "metric": "knn.test_recall_at_1",
     "infonce": 36.98, "weince": 42.94, "gain": 5.96, "source": "Table 3"},
    {"dataset": "cifar100", "backbone": "resnet18", "metric": "knn.test_acc",
     "infonce": 40.73, "weince": 47.38, "gain": 6.65, "source": "Table 6 (kNN-acc@50)"},
    {"dataset": "tiny_imagenet", "backbone": "resnet18", "metric": "knn.test_recall_at_1",
     "infonce": None, "weince": None, "gain": 1.55, "source": "Table 3"},
    {"dataset": "tiny_imagenet", "backbone": "vit_small", "metric": "knn.test_recall_at_1",
     "infonce": None, "weince": None, "gain": 4.23, "source": "Table 3"},
]
METRIC_NAMES = {"linear.test_acc": "linear probe accuracy", "knn.test_acc": "kNN accuracy",
                "knn.test_recall_at_1": "kNN recall@1"}
NOT_RUN = ("not run: `python -m infonce_lab.profiles apply paper_vision` (CIFAR-10/100, STL-10 × "
           "ResNet-18/50; Tiny-ImageNet and ViT-S as params entries), the internet once for the "
           "data, a GPU")


def backbone_tag(cfg: dict[str, Any]) -> str:
    """resnet18 / resnet50 / vit_small / resnet_cifar — the paper's backbone names."""
    if cfg["kind"] == "resnet":
        return f"resnet{cfg['depth']}"
    return cfg["kind"]


def gain_verdict(diff: dict[str, Any]) -> str:
    """WEINCE − InfoNCE over paired seeds: reproduced when the 95% interval lies above 0."""
    if diff["ci95"] is None:
        return inconclusive("one seed: no interval")
    lo, hi = diff["mean"] - diff["ci95"], diff["mean"] + diff["ci95"]
    if lo > 0:
        return REPRODUCED
    if hi < 0:
        return NOT_REPRODUCED
    return inconclusive("CI overlaps 0")


def accuracy_claims(paired: dict[str, Any], loss_kinds: dict[str, str],
                    dataset_kinds: dict[str, str], backbones: dict[str, dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Rows {setting, metric, paper, ours, verdict} — ours first, then the paper's settings."""
    rows: list[dict[str, Any]] = []
    ran: set[tuple[str, str, str]] = set()
    for c, diff in loss_kind_differences(paired, loss_kinds, "weince", "info_nce", METRIC_NAMES):
        setting, schedule, metric = c.setting, c.shared, c.metric
        dataset, _, backbone = setting.partition("-")
        dkind = dataset_kinds.get(dataset, dataset)
        btag = backbone_tag(backbones[backbone]) if backbone in backbones else backbone
        ran.add((dkind, btag, metric))
        paper = next((r for r in PAPER_ROWS if (r["dataset"], r["backbone"], r["metric"])
                      == (dkind, btag, metric)), None)
        ours = f"{100 * diff['mean']:+.2f} points"
        if diff["ci95"] is not None:
            ours += f" ± {100 * diff['ci95']:.2f} (n = {diff['n']} seeds)"
        rows.append({
            "setting": f"{setting} @ {schedule}", "metric": METRIC_NAMES[metric],
            "paper": (f"+{paper['gain']:.2f} points ({paper['source']})" if paper else
                      "gain > 0 (no paper number for this setting)"),
            "ours": ours, "verdict": gain_verdict(diff),
        })
    for r in PAPER_ROWS:
        if (r["dataset"], r["backbone"], r["metric"]) in ran:
            continue
        absolute = (f" ({r['infonce']:.2f} → {r['weince']:.2f})"
                    if r["infonce"] is not None else "")
        rows.append({"setting": f"{r['dataset']} / {r['backbone']} (paper)",
                     "metric": METRIC_NAMES[r["metric"]],
                     "paper": f"+{r['gain']:.2f} points{absolute} ({r['source']})",
                     "ours": "—", "verdict": NOT_RUN})
    return rows
