"""Storage: the resumable unit cache, committed full-profile results, provenance and the one
JSON conversion."""
