"""Tail diagnostics of negative similarities (SPECS B): peaks over threshold and the
softmax-vs-Weibull link test; gradient allocation and the noise floor are still to come."""

from infonce_lab.tails.link import fit_link, link_test
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
           "link_test", "qq_points", "xi_stability"]
