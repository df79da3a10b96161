"""Claims of the papers that the default study cannot run — external models and data, or compute
far beyond two CPU cores. Each has its row, its rule (stated as it would decide), and what it
takes to run it."""

from __future__ import annotations

from infonce_lab.report.sections import Section
from infonce_lab.report.verdicts import Above, ClaimRow, Equivalent, Evidence, not_run_row

RULES = {
    # E.5(4): two models with R@1 within 2 points may still differ in their energy gap.
    "coco_gap_spread": Above(0.0, what="energy-distance gap difference between models of "
                                        "equivalent R@1 (2-point margin)"),
    # E.5(4) shuffle control: permuting caption→image links leaves the marginal gap unchanged.
    "coco_shuffle": Equivalent(0.05, what="relative change of the energy gap under shuffling"),
    # E.5(5): the gap rises with the corruption probability p (slope over p ∈ {0 … 1}).
    "coco_corruption": Above(0.0, what="slope of the centroid gap against p"),
    # Wang & Isola's released STL-10 example: 83.19% linear (fc7) validation accuracy.
    "stl10_au": Equivalent(1.0, center=83.19, unit="points",
                           what="linear validation accuracy on fc7"),
    # Essay: probe accuracy still rises with negatives past the log M saturation.
    "negatives": Above(0.0, what="slope of probe accuracy on log M where L ≈ 0 (saturated)"),
}

COCO = ("open_clip with the nine pretrained models of the figure (hub weights), MS-COCO val2017 "
        "(5,000 images with 5 captions each) and train2017 — the internet and a GPU; not "
        "implemented in this project")


def claim_rows() -> list[ClaimRow]:
    return [
        not_run_row("geometry", "OpenCLIP on MS-COCO (E.5(4))",
                    "Similar retrieval (R@1) coexists with very different modality gaps "
                    "(energy distance, centroid gap) across nine OpenCLIP models (§5)",
                    "energy distance and centroid gap vs I→T/T→I R@1, 20 subsamples of 2,000",
                    RULES["coco_gap_spread"], COCO),
        not_run_row("geometry", "OpenCLIP on MS-COCO (E.5(4))",
                    "Shuffling caption→image links collapses retrieval while the marginal gap "
                    "statistics barely move (§5)",
                    "gap statistics before and after permuting the pairs",
                    RULES["coco_shuffle"], COCO),
        not_run_row("geometry", "Compatibility perturbation on COCO (E.5(5))",
                    "Fine-tuning with corrupted captions (probability p, same category) widens "
                    "the modality gap (§5)",
                    "centroid and energy gaps after 5,000 steps of head fine-tuning, p ∈ "
                    "{0, 0.25, 0.5, 0.75, 1}", RULES["coco_corruption"], COCO),
        not_run_row("au", "The released STL-10 example (F.4)",
                    "Training on L_align(α = 2) + L_uniform(t = 2) alone (AlexNet-variant encoder, "
                    "batch 768, 200 epochs) gives 83.19% linear validation accuracy on fc7 "
                    "(SsnL/align_uniform, examples/stl10)",
                    "linear-probe validation accuracy of the fc7 features, over seeds",
                    RULES["stl10_au"],
                    "STL-10 (the internet once: `infonce-lab profiles apply "
                    "paper_vision` lists it), the AlexNet-variant encoder of the example (not "
                    "implemented; the study's backbones are ResNets and ViT-S) and a GPU"),
        not_run_row("au", "Number of negatives",
                    "Linear-probe accuracy keeps rising with the number of negatives M past the "
                    "point where the InfoNCE bound log M saturates (the essay: MoCo, M = 256 → "
                    "65,536 on ImageNet)",
                    "probe accuracy and log M − L against log M",
                    RULES["negatives"],
                    "a sweep of the negatives per anchor well past saturation (MoCo's queue, not "
                    "implemented; with in-batch negatives, `dvc exp run -S training.batch_size=…` "
                    "on a dataset far larger than digits' 1,347 training images) and a GPU"),
    ]


SECTION = Section(
    id="paper_scale", paper="au", title="Paper scale", evidence=Evidence.PAPER_SCALE, reads=(),
    rules=RULES, rows=lambda i: claim_rows())
