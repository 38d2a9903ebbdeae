"""Chapter 01's study (``book/01_narrow_networks.md``): its experiments as functions."""
