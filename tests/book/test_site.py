"""The website as a reader meets it: build the book, serve it, open every page in Chromium.

For every page of ``_toc.yml``: every local resource answers 200, nothing is loaded from
another host (the site must read offline), every image loads, the browser console has no
errors, the equations are typeset by the MathJax shipped with the site, every figure
caption has its image (no figure shows as the text ``<Figure size …>``) and each chapter
shows its claims admonition. At a desktop window (1 280 px) and a phone's (390 px), every
page reads as a reader expects: no text shows a Markdown table row or rule (every table a
chapter displays is a ``<table>``), the page never scrolls sideways (a wide table scrolls
in its own box), and no check's outcome is shown as console text. Full-page screenshots
are saved under ``_build/screenshots/``: every page at 1 280 px, and the pages of
:data:`PHONE_SHOTS` at 390 px too, for a person to look at.

The book is built first (``jupyter-book build . --warningiserror --keep-going``), unless
``BNN_SITE_PREBUILT=1`` says that ``_build/html`` is current (``make test`` builds it with
``make book`` and sets it). Chromium and ChromeDriver are Debian's (``apt-get install
chromium chromium-driver``; other paths via ``BNN_CHROMIUM`` and ``BNN_CHROMEDRIVER``).
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from bnn_posteriors.site.chapters import toc_files

pytestmark = pytest.mark.slow  # a browser over the built site: not the quick loop

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = os.environ.get("BNN_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("BNN_CHROMEDRIVER", "/usr/bin/chromedriver")
PAGES = list(toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))))
MAX_SHOT_HEIGHT = 40_000  # px; longer pages are cut (Chromium's texture limit)


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves ``_build/html`` and records (path, status) of every request."""

    requests: list[tuple[str, int]]

    def log_request(self, code="-", size="-"):  # noqa: ARG002 (signature of the base class)
        self.requests.append((self.path, int(code)))

    def log_message(self, format, *args):  # noqa: A002 (silence the default stderr log)
        pass


@pytest.fixture(scope="module")
def site():
    """Build the book (unless prebuilt) and serve it on 127.0.0.1; yields (base_url, log)."""
    if os.environ.get("BNN_SITE_PREBUILT") != "1":
        jb = Path(sys.executable).parent / "jupyter-book"
        build = subprocess.run(
            [str(jb), "build", ".", "--warningiserror", "--keep-going"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if build.returncode != 0:
            pytest.fail(f"jupyter-book build failed:\n{(build.stdout + build.stderr)[-6000:]}")
    missing = [p for p in PAGES if not (HTML / f"{p}.html").exists()]
    assert not missing, f"pages missing from {HTML}: {missing}"
    log: list[tuple[str, int]] = []
    handler = functools.partial(type("H", (_Handler,), {"requests": log}), directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", log
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium through Selenium, with the console log enabled."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail(
            f"the browser test needs {CHROMIUM} and {CHROMEDRIVER}: "
            "apt-get install chromium chromium-driver (or set BNN_CHROMIUM, BNN_CHROMEDRIVER)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


_WAIT_FOR_MATHJAX = """
const done = arguments[arguments.length - 1];
if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
  MathJax.startup.promise.then(() => done("typeset")).catch((e) => done("error: " + e));
} else {
  done("no MathJax");
}
"""


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_for_a_reader(page, site, browser):
    base, log = site
    browser.get_log("browser")  # drop what earlier pages left
    start = len(log)
    browser.get(f"{base}/{page}.html")
    mathjax = browser.execute_async_script(_WAIT_FOR_MATHJAX)

    # full-page screenshot (also makes every image enter the viewport and load)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(int(height), MAX_SHOT_HEIGHT))
    time.sleep(0.5)
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / f"{Path(page).name}-1280px.png"))
    browser.set_window_size(1280, 900)

    # the browser asks for /favicon.ico by itself; the pages declare none
    failed = [(path, code) for path, code in log[start:] if code >= 400 and path != "/favicon.ico"]
    assert not failed, f"{page}: local resources failed: {failed}"
    external = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(u => !u.startsWith(location.origin) && !u.startsWith('data:'))"
    )
    assert not external, (
        f"{page}: resources from other hosts (the site must read offline): {external}"
    )
    broken = browser.execute_script(
        "return Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
        ".map(i => i.src)"
    )
    assert not broken, f"{page}: images that did not load: {broken}"
    errors = [
        e
        for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and "/favicon.ico" not in e["message"]
    ]
    assert not errors, f"{page}: console errors: {errors}"

    n_math = browser.execute_script("return document.querySelectorAll('.math').length")
    if n_math:
        assert mathjax == "typeset", f"{page}: MathJax did not run: {mathjax}"
        n_typeset = browser.execute_script(
            "return document.querySelectorAll('mjx-container').length"
        )
        assert n_typeset >= n_math, f"{page}: {n_typeset} of {n_math} equations typeset"
    text = browser.execute_script("return document.querySelector('main').innerText")
    for raw in ("$$", "\\(", "\\["):
        assert raw not in text, f"{page}: raw TeX {raw!r} left in the page"

    # a figure rendered as text: its kernel had no image repr for it (e.g. MPLBACKEND=Agg)
    page_text = browser.execute_script("return document.body.innerText")
    assert "<Figure size" not in page_text, (
        f"{page}: a figure shows as text ('<Figure size …>') instead of an image"
    )
    captions_without_image = browser.execute_script(
        "return Array.from(document.querySelectorAll('main figcaption'))"
        ".filter(c => !(c.closest('figure') || c.parentElement).querySelector('img, svg'))"
        ".map(c => c.textContent.trim().slice(0, 80))"
    )
    assert not captions_without_image, (
        f"{page}: figure captions without an image: {captions_without_image}"
    )

    if Path(page).name[:2].isdigit():  # a chapter: its claims admonition
        titles = browser.execute_script(
            "return Array.from(document.querySelectorAll('.admonition .admonition-title'))"
            ".map(t => t.textContent.trim())"
        )
        assert "Claims" in titles, f"{page}: no Claims admonition (found {titles})"


def test_scorecard_lists_every_claim_with_a_status(site, browser):
    from bnn_posteriors.claims import checking as claims

    base, _ = site
    browser.get(f"{base}/book/scorecard.html")
    # the first table is the scorecard (the seed sweep's table follows it)
    rows = browser.execute_script(
        "return Array.from(document.querySelector('main table').tBodies[0].rows)"
        ".map(r => Array.from(r.cells).map(c => c.textContent.trim()))"
    )
    header = browser.execute_script(
        "return Array.from(document.querySelector('main table').tHead.rows[0].cells)"
        ".map(c => c.textContent.trim())"
    )
    ids = [row[0] for row in rows]
    assert ids == [c["id"] for c in claims.catalogue()]
    quick, full = header.index("quick"), header.index("full")  # the status columns
    statuses = {row[quick] for row in rows} | {row[full] for row in rows}
    stale = "\u00a0(stale)"  # a record checked before its claim's lock changed
    marks = {"✓", "✗", "?", "—"}  # reproduced, not reproduced, inconclusive, not yet run
    assert {s.removesuffix(stale) for s in statuses} <= marks, statuses
    # every claim that a chapter checks links to an existing section of that chapter
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('main table tbody tr td:first-child a'))"
        ".map(a => a.href)"
    )
    assert links, "the scorecard links no claim to a chapter"
    for href in links:
        browser.get(href)
        anchor = href.split("#", 1)[1]
        assert browser.execute_script(
            "return document.getElementById(arguments[0]) !== null", anchor
        ), f"scorecard link {href} points to no section"


# --------------------------------------------------------------------------- as a reader reads

WIDTHS = {"desktop": 1280, "phone": 390}  # px
# pages whose screenshot at the phone's width is saved too, for a person to look at
PHONE_SHOTS = (
    "book/scorecard",
    "book/reproduction_notes",
    "book/06_metricbnn",
    "book/10_reference_posteriors",
)
EXECUTED = ROOT / "_build" / "jupyter_execute"  # the executed notebooks of the build

# Text nodes of the article (code, math and scripts aside) that read as Markdown table
# source: a rule such as "|---|" (or "|—|", once smart quotes have turned "---" into an
# em dash) or a row "| a | b |". A Markdown table rendered as a paragraph shows both.
_RAW_MARKDOWN_TABLES = r"""
const rule = /\|\s*:?[-\u2013\u2014]+:?\s*\|/;
const row = /\|\s[^|\n]+\s\|\s[^|\n]+\s\|/;
const skip = "pre, code, script, style, mjx-container, .cell_input, .math";
const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
const found = [];
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const text = node.textContent;
  if ((rule.test(text) || row.test(text)) && !node.parentElement.closest(skip)) {
    found.push(text.trim().slice(0, 80));
  }
}
return found;
"""

# Boxes that may scroll sideways inside the page: a table's box, code and math (inline math
# also holds MathJax's hidden copy for screen readers, wider than what shows). Any other
# element of the article whose content is wider than itself (scrolling or cut off) is a
# defect, and so is a document wider than the window.
_SIDEWAYS = r"""
const allowed = "pre, div.highlight, .pst-scrollable-table-container, .math, mjx-container";
const root = document.scrollingElement;
const found = [];
if (root.scrollWidth > root.clientWidth + 1) {
  found.push(`the page scrolls sideways: ${root.scrollWidth} > ${root.clientWidth} px`);
}
const article = document.querySelector("main article") || document.querySelector("main");
for (const el of article.querySelectorAll("*")) {
  if (el.scrollWidth <= el.clientWidth + 1 || el.closest(allowed)) continue;
  const overflow = getComputedStyle(el).overflowX;
  if (overflow === "visible") continue;  // what spills out widens its scroller, seen above
  const what = el.tagName.toLowerCase() + (el.className ? "." + el.className : "");
  found.push(`${what} (${overflow}) ${el.scrollWidth} > ${el.clientWidth} px: `
    + el.textContent.trim().slice(0, 60));
}
return found;
"""

# Words of a table cell broken across lines: a column squeezed narrower than its words
# (one letter a line at worst). A line may break between words or after a dash or slash.
_BROKEN_WORDS = r"""
const found = [];
for (const cell of document.querySelectorAll("main article td, main article th")) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest(".math, mjx-container")) continue;
    const word = /[^\s\-\u2010-\u2015\/|]{2,}/g;
    for (let m = word.exec(node.textContent); m; m = word.exec(node.textContent)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
      if (tops.size > 1) found.push(`"${m[0]}" in a ${cell.clientWidth} px cell`);
    }
  }
}
return found;
"""

# a check's outcome shown as console text, e.g. "C6.1 reproduced: measured 0.0024, ..."
_CONSOLE_OUTCOMES = r"""
const outcome = /\bC\d+\.\d+[a-z]?( \[[^\]]*\])? (reproduced|not reproduced|inconclusive):/;
return Array.from(document.querySelectorAll("main pre, main .output.text_plain"))
  .map((el) => el.textContent)
  .filter((text) => outcome.test(text))
  .map((text) => text.trim().slice(0, 80));
"""


def _set_width(browser, width: int, height: int = 900) -> None:
    """The window's viewport at ``width`` × ``height`` CSS px (a phone's is 'mobile')."""
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def displayed_tables(page: str) -> int:
    """How many Markdown tables the build's executed notebook of ``page`` displays (each
    a ``text/markdown`` output with a table rule line), 0 for a page without one."""
    import nbformat

    path = EXECUTED / f"{page}.ipynb"
    if not path.exists():
        return 0
    notebook = nbformat.read(path, as_version=4)
    count = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/markdown", "")
            count += sum(
                1
                for line in text.splitlines()
                if line.startswith("|")
                and set(line.replace("|", "").strip()) <= set("-: ")
                and "-" in line
            )
    return count


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("page", PAGES)
def test_page_reads_at_width(page, width, site, browser):
    """At a desktop's and a phone's width: every table a table, nothing sideways, and no
    check outcome as console text; screenshots for a person to look at."""
    base, _ = site
    pixels = WIDTHS[width]
    _set_width(browser, pixels)
    try:
        browser.get(f"{base}/{page}.html")
        browser.execute_async_script(_WAIT_FOR_MATHJAX)
        time.sleep(0.3)
        raw = browser.execute_script(_RAW_MARKDOWN_TABLES)
        assert not raw, f"{page} at {pixels} px: Markdown tables shown as text: {raw[:5]}"
        expected = displayed_tables(page)
        shown = browser.execute_script("return document.querySelectorAll('main table').length")
        assert shown >= expected, (
            f"{page} at {pixels} px: {shown} <table> elements for the {expected} tables its "
            "notebook displays"
        )
        sideways = browser.execute_script(_SIDEWAYS)
        assert not sideways, f"{page} at {pixels} px: content wider than its box: {sideways[:5]}"
        broken = browser.execute_script(_BROKEN_WORDS)
        assert not broken, f"{page} at {pixels} px: table cells break words: {broken[:5]}"
        console = browser.execute_script(_CONSOLE_OUTCOMES)
        assert not console, f"{page} at {pixels} px: check outcomes as console text: {console[:3]}"
        if width == "phone" and page in PHONE_SHOTS:  # (every page's desktop shot: above)
            height = browser.execute_script("return document.documentElement.scrollHeight")
            _set_width(browser, pixels, min(int(height), MAX_SHOT_HEIGHT))
            time.sleep(0.5)
            SHOTS.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(SHOTS / f"{Path(page).name}-{pixels}px.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
