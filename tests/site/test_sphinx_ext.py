"""Tests of the book's Sphinx extension (repeated inline scripts dropped)."""

from __future__ import annotations

from types import SimpleNamespace

from bnn_posteriors.site import sphinx_ext

PAGE = """<head>
    <script>const THEBE_JS_URL = "x"; const a = 1</script>
    <script async="async" src="_static/thebe.js"></script>
    <script>var toggle = '.toggle';</script>
    <script>const THEBE_JS_URL = "x"; const a = 1</script>
    <script>var toggle = '.toggle';</script>
    <script async="async" src="_static/thebe.js"></script>
</head>
"""


def test_dedupe_inline_scripts_keeps_the_first_copy_only():
    out = sphinx_ext.dedupe_inline_scripts(PAGE)
    assert out.count("THEBE_JS_URL") == 1 and out.count("var toggle") == 1
    assert out.count('src="_static/thebe.js"') == 2  # scripts with src are left alone
    assert sphinx_ext.dedupe_inline_scripts(out) == out


def test_dedupe_pages_rewrites_html_after_a_successful_build(tmp_path):
    (tmp_path / "sub").mkdir()
    page = tmp_path / "sub" / "page.html"
    page.write_text(PAGE)
    app = SimpleNamespace(outdir=tmp_path, builder=SimpleNamespace(format="html"))
    sphinx_ext.dedupe_pages(app, RuntimeError("build failed"))
    assert page.read_text() == PAGE  # a failed build is left as it is
    sphinx_ext.dedupe_pages(app, None)
    assert page.read_text().count("THEBE_JS_URL") == 1
