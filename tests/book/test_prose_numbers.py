"""No number is typed into a chapter's prose: every one is glued from a computed value.

The rule of the book: the prose states measured values, budgets and settings through
myst-nb's ``glue`` ({glue:text}`name:fmt`), so that a rerun under another profile or seed
cannot leave a stale number in the text. This test reads every document of ``_toc.yml``
as text (nothing is executed) and keeps its prose only: no front matter, no code cells,
no math or code blocks, no directive options. From the prose it removes what carries
digits without being a number of this book (glue roles, math, citations and
cross-references, inline code, link targets and URLs, claim ids, references to a paper's
numbered parts, years of citations and dates) and the short allow-list of fixed facts
below, each justified. Any digit left is a typed number: the test of its document fails
and names the file, the line, the number and the sentence.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from bnn_posteriors.site.chapters import toc_files

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------
# 1. Blocks that are not prose
# ---------------------------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\s*(?P<info>\{[^}]*\}|[\w+-]*)")
# Directives whose body is prose; every other fenced block (code cells, {math}, plain code,
# {footbibliography}, ...) is dropped whole. The option lines (`:name: x`) that open a
# directive are dropped, and so is its argument, except an admonition's title (prose).
_PROSE_DIRECTIVES = frozenset(
    f"{{{name}}}"
    for name in (
        "admonition",
        "note",
        "tip",
        "warning",
        "important",
        "caution",
        "attention",
        "hint",
        "seealso",
        "margin",
        "dropdown",
        "epigraph",
        "figure",
        "glue:figure",
    )
)
_OPTION = re.compile(r"^\s*:[\w-]+:")


def prose_lines(text: str) -> list[str]:
    """The lines of a MyST document with everything but prose blanked (numbering kept)."""
    lines = text.split("\n")
    out = [""] * len(lines)
    start = 0
    if lines and lines[0].strip() == "---":  # front matter
        start = next((j + 1 for j in range(1, len(lines)) if lines[j].strip() == "---"), 0)
    stack: list[tuple[str, bool]] = []  # the open fences: (fence, is its body prose?)
    options = False  # within the option lines that open a directive
    for n in range(start, len(lines)):
        line = lines[n]
        fence = _FENCE.match(line.strip())
        if fence:
            if stack and line.strip() == stack[-1][0]:  # the closing fence
                stack.pop()
                options = False
                continue
            if not stack or stack[-1][1]:  # an opening fence, in prose
                prose = fence["info"] in _PROSE_DIRECTIVES
                stack.append((fence["fence"], prose))
                options = prose
                if fence["info"] == "{admonition}":
                    out[n] = line.strip()[fence.end() :]  # its title
                continue
        if stack and not stack[-1][1]:
            continue  # in a code cell, a math block, a code block, ...
        if options and _OPTION.match(line):
            continue
        options = False
        out[n] = line
    return out


# ---------------------------------------------------------------------------------------
# 2. Markup and references whose digits are not the book's numbers
# ---------------------------------------------------------------------------------------

_DASH = r"\s*[–—-]\s*"
_PART = r"\(?[A-Z]?\.?\d+(?:\.\d+)*[a-z]?\)?"  # 3, (27), B.5, D.2, 4.1a
_PARTS = rf"{_PART}(?:(?:{_DASH}|,\s*|\s+and\s+|\s+to\s+){_PART})*"  # 8–9, (2)–(3), 1, 5, 7
_PAPER_PARTS = (  # how a paper's numbered parts are named: §2.3, Fig. 9, App. D.2, ...
    r"§+\s*",
    r"\b(?:Fig(?:ure)?s?\.?|Tables?)\s+",
    r"\bApp(?:endix|endices)?\.?\s+",
    r"\b[Ee]q(?:uation)?s?\.?\s+(?:above\s+|below\s+)?",
    r"\b(?:Prop(?:osition)?|Def(?:inition)?|Cor(?:ollary)?|Lemma|Thm|Theorem|Alg(?:orithm)?"
    r"|Sec(?:tion)?)s?\.?\s+",
    r"\b[Ss]lides?\s+",
    r"\b[Tt]erms?\s+(?=\()",  # the labelled terms of a paper's equation: term (1)
)
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"

STRIPPED: list[tuple[str, str]] = [
    (r"<!--.*?-->", "HTML comment"),
    # {glue:text}`x:.3f`, {glue:}`x`, {footcite:p}`key`, {cite:t}`key`, {ref}`label`,
    # {eq}`label`, {numref}`label`, {math}`...`, {doc}`...`
    (
        r"\{(?:glue(?::\w*)?|footcite(?::\w+)?|cite(?::\w+)?|ref|eq|numref|math|doc|download"
        r"|term|abbr)\}`[^`]*`",
        "MyST role",
    ),
    (r"\$\$.*?\$\$", "display math"),
    (r"(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?![ \t]*\n))+?(?<!\\)\$", "inline math"),
    (r"`[^`\n]+`", "inline code"),
    (r"^[ \t]*\([\w:.-]+\)=[ \t]*$", "MyST label"),
    (r"\]\([^)\s]*\)", "link target"),
    (r"<https?://[^>\s]+>|https?://[^\s)>]+|\bdoi:\S+|\b10\.\d{4,}/\S+", "URL or DOI"),
    (r"\barXiv:?\s*\d{4}\.\d{4,5}(?:v\d+)?", "arXiv id"),
    (rf"\bC\d+\.\d+(?:{_DASH}C?\d+\.\d+)*", "claim id"),  # C1.4, C2.2–C2.5
    *((rf"(?:{prefix}){_PARTS}", "part of a paper") for prefix in _PAPER_PARTS),
    (r"(?:\bet al\.?,?|\b[A-Z][A-Za-z-]+,)\s+(?:19|20)\d\d[a-z]?\b", "year of a citation"),
    (r"\((?:19|20)\d\d[a-z]?\)", "year of a citation"),
    (rf"\b(?:{_MONTHS})\s+(?:\d{{1,2}},?\s+)?(?:19|20)\d\d\b", "date"),
    (r"\b(?:in|since|until)\s+(?:19|20)\d\d\b", "year"),
]

# ---------------------------------------------------------------------------------------
# 3. The allow-list: fixed facts that no profile and no seed can change
# ---------------------------------------------------------------------------------------
# Never allowed: a measured value (a percentage, a ratio, an ESS, a count, "a quarter of
# the pairs" in digits), a budget or setting of the quick/full profiles (draws, steps,
# chains, seeds, learning rates, grids of widths or scales), an interval level. Those
# change with the profile or the seed and are glued. Numbers written as words ("ten
# chains", "the first layer", ordinal words) carry no digit and need no entry.
ALLOWED: list[tuple[str, str]] = [
    # Widths and depths of a network, stated as the architecture a claim is about:
    # "64 neurons", "the 64-neuron network", "8 (top) and 64 (bottom) hidden neurons",
    # "from 8 to 64 neurons" (a count of neurons, never of anything else) ...
    (
        r"\b\d+(?:\s+\((?:top|bottom)\))?(?:\s+(?:and|to|or)\s+(?:with\s+)?\d+"
        r"(?:\s+\((?:top|bottom)\))?)?[-\s]+(?:hidden[-\s]+)?neurons?\b",
        "width in neurons",
    ),
    # ... "a 3×16 ReLU network", "4×16 hidden units", "the 3×16 runs" (layers × units; not
    # "5×5 convolutions") ...
    (
        r"\b\d+\s*×\s*\d+(?=[-\s]+(?:hidden[-\s]+)?(?:(?:ReLU|tanh)\s+)?(?:units?|network|MLP|runs)\b)",
        "depth × width",
    ),
    # ... "three hidden layers of 16 units", "16-unit layers", "16 hidden units" ("units"
    # alone is not enough: it also counts the units of work of a benchmark) ...
    (
        r"\blayers?\s+of\s+\d+\s+(?:ReLU\s+|tanh\s+)?units\b|\b\d+-unit\b"
        r"|\b\d+[-\s]+hidden[-\s]+units?\b",
        "width in units",
    ),
    # ... "1–4 hidden layers", "a 2-layer network" ("L = 2" is math, removed above).
    (r"\b\d+(?:\s*[–-]\s*\d+)?[-\s]+hidden[-\s]+layers?\b|\b\d+-layer\b", "depth"),
    # Ordinals in digits name a position (the 2nd layer), never an amount; single digit only
    # ("the 95th percentile" is a setting).
    (r"\b(?:1st|2nd|3rd|[4-9]th)\b", "ordinal"),
    # Names that contain digits: IEEE floating-point types of NumPy/JAX (float64 round-off);
    # the data set CIFAR-10 and the architecture ResNet-20 of the slides (named, not run);
    # the NVIDIA H100 GPU on which results/README.md times the benchmark.
    (r"\bfloat(?:16|32|64)\b|\bCIFAR-10\b|\bResNet-20\b|\bH100\b", "name with digits"),
    # The row labels of [SAP] Table 2, which benchmark.METHOD_LABELS copies: the ensemble
    # of the paper is part of the method's name (BDE(10), BDE(1), DE(10)).
    (r"\bB?DE\((?:1|10)\)", "method name of [SAP] Table 2"),
    # The Python version the package requires (pyproject.toml: requires-python 3.11).
    (r"\bPython 3\.11\b", "required Python version"),
]

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:[ \u00a0\u202f\u2009]\d{3}(?!\d))*")


class TypedNumber(NamedTuple):
    line: int  # 1-based line of the document
    number: str
    sentence: str  # that line of the source, stripped


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group())


def strip_prose(prose: str) -> str:
    """Blank every role, math, reference and id, then the allowed facts (lines kept)."""
    for pattern, _ in (*STRIPPED, *ALLOWED):
        prose = re.sub(pattern, _blank, prose, flags=re.M | re.S)
    return prose


def typed_numbers(text: str) -> list[TypedNumber]:
    """Every number typed into the prose of the MyST document ``text``."""
    source = text.split("\n")
    stripped = strip_prose("\n".join(prose_lines(text))).split("\n")
    return [
        TypedNumber(n + 1, m.group(), source[n].strip())
        for n, line in enumerate(stripped)
        for m in _NUMBER.finditer(line)
    ]


def toc_documents() -> list[str]:
    """The documents of ``_toc.yml``, as paths relative to the repository."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [f"{name}.md" for name in toc_files(toc)]


@pytest.mark.parametrize("document", toc_documents())
def test_no_typed_number_in_prose(document):
    found = typed_numbers((ROOT / document).read_text(encoding="utf-8"))
    if found:
        report = "\n".join(f"{document}:{t.line}: {t.number} — {t.sentence}" for t in found)
        pytest.fail(f"numbers typed into the prose (glue them, or drop them):\n{report}", False)


SYNTHETIC = """\
---
jupytext:
  text_representation:
    format_version: 0.13
---

(ch-demo)=
# A demo chapter (C9.1)

The dip test rejects for a quarter of the pairs.
The ESS is 11 of 5 000 draws.
The ESS is {glue:text}`ess:.0f` of $N$ draws, as in [SAP] Fig. 9 and App. D.2.
A network of 64 neurons, see {footcite:t}`kobialka2025approximate` and {eq}`eq-g`.
See Prop. B.5, eqs. (2)–(3), §2.3, Figs. 8–9, Table 2, slide 12 and C2.2–C2.5.
At least 90 % of the chains mix.

```{code-cell} ipython3
check("C9.1", ess)
```

```{math}
:label: eq-g
g(\\beta) = 2 \\beta
```

```{glue:figure} fig-demo
:name: fig-demo

Caption: {glue:text}`n_chains` chains of 1 000 draws.
```
"""


def test_checker_catches_typed_numbers():
    found = typed_numbers(SYNTHETIC)
    lines = SYNTHETIC.split("\n")
    caught = [(lines[t.line - 1], t.number) for t in found]
    assert caught == [
        ("The ESS is 11 of 5 000 draws.", "11"),
        ("The ESS is 11 of 5 000 draws.", "5 000"),
        ("At least 90 % of the chains mix.", "90"),
        ("Caption: {glue:text}`n_chains` chains of 1 000 draws.", "1 000"),
    ]
    assert all(t.sentence == lines[t.line - 1].strip() for t in found)


def test_checker_keeps_words_and_glue():
    text = "The dip test rejects for a quarter of the pairs.\n"
    text += "The ESS is {glue:text}`ess:.0f` of $N$ draws.\n"
    assert typed_numbers(text) == []
    assert [t.number for t in typed_numbers("The ESS is 11 of 5 000 draws.")] == ["11", "5 000"]
