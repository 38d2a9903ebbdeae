"""Models: networks as plain pytrees, the NumPyro models, and their symmetries."""
