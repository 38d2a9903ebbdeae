"""Inference methods: NUTS (``mcmc``) and mean-field variational inference (``vi``)."""
