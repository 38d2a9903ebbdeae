"""Claims: the catalogue of the papers' sentences, the checks that decide them, the seed sweep
and the scorecard."""
