"""Tail diagnostics of negative similarities (SPECS B): peaks over threshold, the
softmax-vs-Weibull link test, gradient allocation and the noise floor. Pure functions; the
diagnose stage that runs them on every run's checkpoints is still to be wired."""

from infonce_lab.tails.allocation import (
    gradient_allocation,
    softmax_negative_grads,
    weibit_negative_grads,
)
from infonce_lab.tails.link import fit_link, link_test
from infonce_lab.tails.noise_floor import noise_floor
from infonce_lab.tails.pot import (
    bootstrap_xi,
    endpoint,
    exceedances,
    fit_gpd,
    gpd_loglik,
    qq_points,
    xi_stability,
)

__all__ = ["bootstrap_xi", "endpoint", "exceedances", "fit_gpd", "fit_link", "gpd_loglik",
           "gradient_allocation", "link_test", "noise_floor", "qq_points", "softmax_negative_grads",
           "weibit_negative_grads", "xi_stability"]
