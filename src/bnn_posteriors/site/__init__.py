"""The book as a site: run profiles and chapter settings, tables, the figure style, the chapters
as data, and a Sphinx extension."""
