"""Chapter 03's study (``book/03_symmetries.md``): its experiments as functions.

:mod:`.runs` draws the priors' symmetry checks, loads the two-weight regression of
[SAP] Fig. 2 and runs NUTS and (plain and adjusted-prior) MFVI on it, through
:mod:`bnn_posteriors.studies.ch01_narrow_networks.narrow_posterior`; :mod:`.evidence`
turns the measures into one :class:`~bnn_posteriors.claims.checking.Evidence` per check
of C3.1–C3.7; :mod:`.figures` draws the chapter's figures.
"""
