"""The book's chapters as data: their sections, where each claim is checked, their notes.

The scorecard links every claim to the section of the chapter that checks it (the
section whose heading names the claim id, e.g. ``## Distant layers (C3.5)``), and the
reproduction-notes page collects the ``## Reproduction notes`` section of every
chapter. Both read the chapters' MyST sources listed in ``_toc.yml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from myst_parser.mdit_to_docutils.base import default_slugify

from bnn_posteriors.store.provenance import repo_root

_CLAIM_IDS = re.compile(r"C(\d+)\.(\d+)(?:\s*[–-]\s*C?(\d+)\.(\d+))?")
_MATH = re.compile(r"\$[^$]*\$")
_LEAD = re.compile(r"^\*\*(?P<title>.+?)\*\*\s*(?P<rest>.*)$", re.S)
_SENTENCE_END = re.compile(r"[.!?]\s+(?=[A-Z])")
_ABBREVIATIONS = ("eq", "eqs", "fig", "figs", "app", "prop", "def", "cor", "al", "e.g", "i.e", "vs")
NOTES_TITLE = "Reproduction notes"


@dataclass(frozen=True)
class Section:
    """A heading of a chapter: level (1 = title), text, MyST anchor slug, body lines."""

    level: int
    title: str
    slug: str
    body: str


@dataclass(frozen=True)
class Note:
    """One reproduction note: its bold lead and its first sentence."""

    title: str
    summary: str


def toc_files(node) -> Iterator[str]:
    """Every document of a Jupyter Book ``_toc.yml`` (``root`` and ``file`` entries, in order).

    ``node`` is the parsed YAML; entries are yielded without a ``.md``/``.ipynb`` suffix.
    """
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("root", "file") and isinstance(value, str):
                yield value.removesuffix(".md").removesuffix(".ipynb")
            else:
                yield from toc_files(value)
    elif isinstance(node, list):
        for item in node:
            yield from toc_files(item)


def book_dir() -> Path:
    """The ``book/`` folder of the repository."""
    root = repo_root()
    if root is None:
        raise FileNotFoundError("not inside the book's repository (no _toc.yml found)")
    return root / "book"


def chapter_paths(directory: Path | None = None) -> list[Path]:
    """The numbered chapters of ``_toc.yml`` (``book/NN_slug.md``), in the table's order."""
    directory = book_dir() if directory is None else Path(directory)
    toc = yaml.safe_load((directory.parent / "_toc.yml").read_text(encoding="utf-8"))
    paths = [directory.parent / f"{name}.md" for name in toc_files(toc)]
    return [p for p in paths if p.parent == directory and re.match(r"\d\d_", p.name)]


def _body(text: str) -> str:
    """The text without its YAML front matter (markdown-it would read it as a heading)."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5 :]
    return text


def _source_lines(tok: Token) -> tuple[int, int]:
    """The source lines ``[start, end)`` of a block token (markdown-it maps every block)."""
    if tok.map is None:
        raise ValueError(f"markdown-it gave the {tok.type} token no source lines")
    start, end = tok.map
    return start, end


def sections(path: Path | str) -> list[Section]:
    """The headings of a MyST file in order (headings inside code cells are not headings).

    ``slug`` is the anchor MyST gives the heading (GitHub style; inline math is dropped,
    as MyST does), usable in links ``file.md#slug``.
    """
    lines = _body(Path(path).read_text(encoding="utf-8")).splitlines()
    tokens = MarkdownIt("commonmark").parse("\n".join(lines))
    heads = [
        (int(tok.tag[1]), tokens[i + 1].content, _source_lines(tok))
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open"
    ]
    out = []
    for k, (level, title, (_, end)) in enumerate(heads):
        stop = next((m[0] for lv, _, m in heads[k + 1 :] if lv <= level), len(lines))
        slug = default_slugify(_MATH.sub("", title).strip())
        out.append(Section(level, title, slug, "\n".join(lines[end:stop]).strip()))
    return out


def claim_ids(title: str) -> list[str]:
    """The claim ids a heading names: ``(C1.2, C1.3)`` → both; ``C1.7–C1.9`` → the range."""
    ids = []
    for match in _CLAIM_IDS.finditer(title):
        chapter, first, last_chapter, last = match.groups()
        if last is None:
            ids.append(f"C{chapter}.{first}")
            continue
        if last_chapter != chapter or int(last) < int(first):
            raise ValueError(f"bad claim range {match.group(0)!r} in heading {title!r}")
        ids += [f"C{chapter}.{n}" for n in range(int(first), int(last) + 1)]
    return ids


def claim_links(directory: Path | None = None) -> dict[str, str]:
    """Claim id → ``NN_slug.md#anchor``, the first section of a chapter that names the id."""
    links: dict[str, str] = {}
    for path in chapter_paths(directory):
        for section in sections(path):
            for claim_id in claim_ids(section.title):
                links.setdefault(claim_id, f"{path.name}#{section.slug}")
    return links


def reproduction_notes(path: Path | str) -> list[Note]:
    """The top-level bullets of the chapter's ``## Reproduction notes`` section.

    Each bullet starts with a bold lead (``- **Sign.** ...``); its summary is the first
    sentence after the lead, or empty if that sentence pastes computed values (a
    ``{glue...}`` role only resolves on its own page).
    """
    body = next((s.body for s in sections(path) if s.title == NOTES_TITLE), None)
    if body is None:
        return []
    tokens = MarkdownIt("commonmark").parse(body)
    lines = body.splitlines()
    notes, depth = [], 0
    for tok in tokens:
        if tok.type == "bullet_list_open":
            depth += 1
        elif tok.type == "bullet_list_close":
            depth -= 1
        elif tok.type == "list_item_open" and depth == 1:
            start, end = _source_lines(tok)
            text = " ".join(line.strip() for line in lines[start:end]).removeprefix("- ")
            lead = _LEAD.match(text)
            if lead is None:
                raise ValueError(
                    f"{path}: a reproduction note must start with a bold lead: {text!r}"
                )
            first = first_sentence(lead["rest"].strip())
            notes.append(Note(lead["title"].strip(), "" if "{glue" in first else first))
    return notes


def first_sentence(text: str) -> str:
    """Text up to the first full stop that ends a sentence (not "Eq.", "Fig.", "e.g." ...)."""
    for match in _SENTENCE_END.finditer(text):
        word = text[: match.start()].rsplit(None, 1)[-1].lower().lstrip("(")
        if word not in _ABBREVIATIONS and not re.fullmatch(r"[a-z]", word):
            return text[: match.start() + 1]
    return text


def chapter_title(path: Path | str) -> tuple[str, str | None]:
    """The chapter's title and its label ``(label)=`` if it has one."""
    text = _body(Path(path).read_text(encoding="utf-8"))
    label = re.search(r"^\((?P<label>[\w-]+)\)=\s*$", text, re.M)
    title = next(s.title for s in sections(path) if s.level == 1)
    return title, label["label"] if label else None


def reproduction_notes_markdown(directory: Path | None = None) -> str:
    """All chapters' reproduction notes as MyST, each linking back to its chapter's section."""
    parts = []
    for path in chapter_paths(directory):
        notes = reproduction_notes(path)
        if not notes:
            continue
        title, _ = chapter_title(path)
        anchor = default_slugify(NOTES_TITLE)
        parts.append(f"### [{title}]({path.name}#{anchor})\n")
        parts += [
            f"- **{n.title}** {n.summary or '(computed values: see the chapter)'}" for n in notes
        ]
        parts.append("")
    return "\n".join(parts)
