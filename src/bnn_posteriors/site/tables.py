"""Tables a reader can read: Markdown tables of computed values, for ``IPython.display``.

A chapter shows a table with ``display(Markdown(tables.markdown_table(header, rows)))``;
myst-nb renders the Markdown output as an HTML table that wraps to the page, where
printed monospace text would overflow it. The cells are formatted from the computed
values (:func:`pm`, :func:`number`), never typed. What a chapter shows without checking it
is an :class:`Overview` (the numbers behind a check are the table and glue of its
:class:`~bnn_posteriors.claims.checking.Evidence`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def escape(cell) -> str:
    """A cell's text with ``|`` escaped and line breaks as spaces (one table row per line)."""
    return str(cell).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence, rows: Iterable[Sequence], align: str | None = None) -> str:
    """A GitHub/MyST Markdown table: a header row, a rule, one line per row.

    ``align`` gives one of ``l``, ``r``, ``c`` per column (default: no alignment marks).
    Every row must have as many cells as the header; cells are :func:`escape`\\ d.
    """
    header = [escape(h) for h in header]
    if not header:
        raise ValueError("a table needs at least one column")
    if align is None:
        rule = ["---"] * len(header)
    else:
        marks = {"l": ":--", "r": "--:", "c": ":-:"}
        if len(align) != len(header) or set(align) - set(marks):
            raise ValueError(
                f"align must have one of l/r/c per column ({len(header)}), got {align!r}"
            )
        rule = [marks[a] for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    for i, row in enumerate(rows):
        cells = [escape(c) for c in row]
        if len(cells) != len(header):
            raise ValueError(f"row {i} has {len(cells)} cells, the header {len(header)}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def number(x, fmt: str = ".3f") -> str:
    """``x`` formatted with ``fmt``; "—" for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return format(x, fmt)


def number_list(values: Iterable, fmt: str = ".3f") -> str:
    """The numbers ``values`` formatted with ``fmt`` (:func:`number`), joined by ", "."""
    return ", ".join(number(v, fmt) for v in values)


def pm(value, fmt: str = ".3f") -> str:
    """'mean ± sd' of a (mean, sd, ...) tuple; the mean alone where the sd is NaN (one split)."""
    mean, sd = value[0], value[1]
    return number(mean, fmt) if not math.isfinite(sd) else f"{mean:{fmt}} ± {sd:{fmt}}"


def glue_values(values: Mapping) -> None:
    """Glue each value under its name for the prose (``myst_nb.glue``, not displayed).

    NumPy scalars become Python numbers, so that ``{glue:text}`name:.3f``` formats them.
    """
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value.item() if isinstance(value, np.generic) else value, display=False)


@dataclass(frozen=True)
class Overview:
    """Numbers a chapter shows but does not check: a Markdown ``table`` (or None) and the
    values its prose cites, to ``glue`` under their names."""

    table: str | None
    glue: Mapping[str, Any] = field(default_factory=dict)

    def show(self) -> None:
        """Glue the values (:func:`glue_values`) and display the table."""
        glue_values(self.glue)
        if self.table is not None:
            from IPython.display import Markdown, display

            display(Markdown(self.table))
