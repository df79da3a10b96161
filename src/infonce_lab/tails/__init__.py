"""Tail diagnostics of negative similarities (SPECS B): peaks over threshold, and (to come) the
softmax-vs-Weibull link test, gradient allocation and the noise floor."""

from infonce_lab.tails.pot import (
    bootstrap_xi,
    endpoint,
    exceedances,
    fit_gpd,
    gpd_loglik,
    qq_points,
    xi_stability,
)

__all__ = ["bootstrap_xi", "endpoint", "exceedances", "fit_gpd", "gpd_loglik", "qq_points",
           "xi_stability"]
