"""Chapter 02's study (``book/02_convexified_relu.md``): its experiments as functions.

:mod:`.posterior_runs` samples the posterior on airfoil and measures the chains,
:mod:`.chain_marginals` holds the per-chain statistics (dip test, shrinkage, ESS gate),
:mod:`.evidence` turns the measures into one :class:`~bnn_posteriors.claims.checking.Evidence`
per check of C2.1–C2.5, and :mod:`.figures` draws the chapter's figures.
"""
