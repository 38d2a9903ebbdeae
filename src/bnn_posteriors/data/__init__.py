"""Data: the book's data sets, fetched from pinned sources, verified by hash, loaded and split."""
