"""Chapter 02's study (``book/02_convexified_relu.md``): its experiments as functions."""
