"""The chapters' experiments as functions: fits over widths, depths, splits and seeds, and
the summaries their claim checks read. Each module serves one study of one paper."""
