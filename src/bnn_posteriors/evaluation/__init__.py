"""Evaluation: predictive metrics, MCMC diagnostics, predictives of samples, and the cost of a
method in FLOPs."""
