"""Tail diagnostics of negative similarities (WEINCE §2.3, App. C–D): peaks over threshold, the
softmax-vs-Weibull link test and its ablations, gradient allocation, the repulsion shares
over τ and the noise floor.

The math (``pot``, ``link``, ``ablations``, ``allocation``, ``noise_floor``) is pure functions on
arrays; ``banks`` draws score banks from a frozen encoder (an embedding callable). The diagnose
stage applies them to each checkpoint with the study's settings; nothing here reads params."""

from infonce_lab.tails.ablations import frechet_ablation, hardness_ablation, pool_size_ablation
from infonce_lab.tails.allocation import (
    gradient_allocation,
    softmax_negative_grads,
    weibit_negative_grads,
)
from infonce_lab.tails.link import LinkFit, fit_link, held_out_gain, link_test, log_probs
from infonce_lab.tails.noise_floor import noise_floor
from infonce_lab.tails.pot import (
    bootstrap_xi,
    cluster_bootstrap,
    cluster_weights,
    endpoint,
    exceedances,
    exponential_lrt,
    fit_gpd,
    fit_gpd_weighted,
    gpd_loglik,
    iid_xi_se,
    profile_sigma,
    qq_points,
    xi_design_effect,
    xi_stability,
)
from infonce_lab.tails.repulsion import repulsion_shares

__all__ = ["LinkFit", "bootstrap_xi", "cluster_bootstrap", "cluster_weights", "endpoint",
           "exceedances", "exponential_lrt", "fit_gpd", "fit_gpd_weighted", "fit_link", "frechet_ablation",
           "gpd_loglik", "gradient_allocation", "hardness_ablation",
           "held_out_gain", "iid_xi_se", "link_test", "log_probs", "noise_floor", "pool_size_ablation",
           "profile_sigma", "qq_points", "repulsion_shares", "softmax_negative_grads", "weibit_negative_grads",
           "xi_design_effect", "xi_stability"]
