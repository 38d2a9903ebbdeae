"""The table of contents lists every chapter of book/ and nothing that does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from bnn_posteriors.site.chapters import toc_files

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]


def test_toc_walker_on_nested_toc(tmp_path):
    toc = tmp_path / "_toc.yml"
    toc.write_text(
        "format: jb-book\n"
        "root: book/intro\n"
        "parts:\n"
        "  - caption: One\n"
        "    chapters:\n"
        "      - file: book/01_a\n"
        "        sections:\n"
        "          - file: book/01b_sub.md\n"
        "      - url: https://example.org\n"
        "  - caption: Two\n"
        "    chapters:\n"
        "      - file: book/02_b\n"
    )
    files = list(toc_files(yaml.safe_load(toc.read_text())))
    assert files == ["book/intro", "book/01_a", "book/01b_sub", "book/02_b"]


def test_toc_matches_book_folder():
    toc = ROOT / "_toc.yml"
    assert toc.is_file(), f"{toc} is missing"
    entries = list(toc_files(yaml.safe_load(toc.read_text(encoding="utf-8"))))
    assert entries, f"{toc} lists no documents"
    duplicates = sorted({e for e in entries if entries.count(e) > 1})
    assert not duplicates, f"listed more than once in _toc.yml: {duplicates}"
    missing = [e for e in entries if not (ROOT / f"{e}.md").is_file()]
    assert not missing, f"_toc.yml entries without a .md file: {missing}"
    pages = {p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "book").glob("*.md")}
    unlisted = sorted(pages - set(entries))
    assert not unlisted, f"book/*.md files not in _toc.yml: {unlisted}"
