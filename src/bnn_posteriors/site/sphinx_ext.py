"""A Sphinx extension of the book: drop repeated inline scripts from the built pages.

sphinx-thebe and sphinx-togglebutton (pulled in by Jupyter Book 1.x) end up with their
inline configuration scripts twice in every page of this book's build; the second
``const THEBE_JS_URL = ...`` is a JavaScript error in the reader's browser. After the
build, every page keeps the first of identical inline ``<script>`` lines. Listed under
``sphinx.extra_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

import re
from pathlib import Path

_INLINE_SCRIPT = re.compile(r"^\s*<script>.*</script>\s*$")


def dedupe_inline_scripts(html: str) -> str:
    """The page with every repeated, identical inline ``<script>...</script>`` line removed."""
    seen, lines = set(), []
    for line in html.splitlines(keepends=True):
        if _INLINE_SCRIPT.match(line):
            key = line.strip()
            if key in seen:
                continue
            seen.add(key)
        lines.append(line)
    return "".join(lines)


def dedupe_pages(app, exception) -> None:
    """``build-finished`` handler: rewrite every HTML page of the output folder."""
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        new = dedupe_inline_scripts(text)
        if new != text:
            path.write_text(new, encoding="utf-8")


def setup(app):
    app.connect("build-finished", dedupe_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
