"""Chapter 10's study (the closing chapter, "Which approximation is closest?"): reference
posteriors from long, well-mixed NUTS chains on small problems, and every method scored
against them.

``problems`` defines the problems (data, model, the points where the reference predictive is
stored); the reference run is :mod:`bnn_posteriors.inference.reference`, its mixing diagnostics
:mod:`bnn_posteriors.evaluation.function_space` and its files
:mod:`bnn_posteriors.store.reference`; ``bnn-posteriors reference PROBLEM`` builds one.
"""
