"""Chapter 04's study (``book/04_elbo_tempering.md``): its experiments as functions."""
