"""Chapter 05's study (``book/05_symmetrised_vi.md``): its experiments as functions."""
