"""Chapter 07's study (``book/07_sampling_in_practice.md``): its experiments as functions."""
