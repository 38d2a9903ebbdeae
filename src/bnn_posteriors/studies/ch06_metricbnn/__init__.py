"""Chapter 06's study (``book/06_metricbnn.md``): its experiments as functions."""
