"""The ``bnn-posteriors`` command."""
