"""Chapter 08's study (``book/08_benchmarks.md``): its experiments as functions."""
