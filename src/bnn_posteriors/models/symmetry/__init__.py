"""Symmetries of neural networks: the permutation group of hidden units, and which priors keep
the posterior's symmetries ([SAP] App. B)."""
