"""Validation of inputs at the package's public entry points."""
