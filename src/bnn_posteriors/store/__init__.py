"""Storage: the resumable unit cache, the part store of resumable studies, committed
full-profile results, provenance and the one JSON conversion."""
