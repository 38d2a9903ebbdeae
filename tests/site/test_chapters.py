"""Tests of the chapter parsing behind the scorecard links and the reproduction-notes page."""

from __future__ import annotations

import textwrap

import pytest

from bnn_posteriors.site import chapters as book

CHAPTER = textwrap.dedent(
    """\
    ---
    jupytext:
      formats: ipynb,md:myst
    ---

    (ch-demo)=
    # A demo chapter

    Intro.

    ## The first claim (C9.1)

    ```{code-cell} ipython3
    # a comment, not a heading (C9.4)
    x = 1
    ```

    ## Two more, with math $u$ (C9.2–C9.3, Fig. 1)

    Text.

    ### A subsection

    More.

    ## Reproduction notes

    - **Sign.** The paper says f is the log posterior. It is the negative one.
    - **Fig. 6.** The root is 0.777, see Eq. (3) above. Not 0.7775.
    - **Warm-up.** NUTS adapted in {glue:text}`n:d` steps. More text.
      - a nested bullet is part of its parent

    ## Takeaways

    - not a note
    """
)


@pytest.fixture()
def repo(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/09_demo\n"
        "  - file: book/scorecard\n"
    )
    (tmp_path / "book" / "09_demo.md").write_text(CHAPTER)
    return tmp_path / "book"


def test_sections_skip_code_and_front_matter(repo):
    secs = book.sections(repo / "09_demo.md")
    assert [s.title for s in secs] == [
        "A demo chapter",
        "The first claim (C9.1)",
        "Two more, with math $u$ (C9.2–C9.3, Fig. 1)",
        "A subsection",
        "Reproduction notes",
        "Takeaways",
    ]
    assert [s.level for s in secs] == [1, 2, 2, 3, 2, 2]
    assert secs[2].slug == "two-more-with-math--c92c93-fig-1"  # MyST drops inline math
    assert "### A subsection" in secs[2].body and "Reproduction" not in secs[2].body


def test_claim_ids_expand_ranges_and_lists():
    assert book.claim_ids("Weight decay (C1.2, C1.3)") == ["C1.2", "C1.3"]
    assert book.claim_ids("Minima (C1.7–C1.9)") == ["C1.7", "C1.8", "C1.9"]
    assert book.claim_ids("No claim here") == []
    with pytest.raises(ValueError, match="bad claim range"):
        book.claim_ids("(C1.9–C1.7)")


def test_claim_links_point_to_the_first_section_naming_the_claim(repo):
    links = book.claim_links(repo)
    assert links == {
        "C9.1": "09_demo.md#the-first-claim-c91",
        "C9.2": "09_demo.md#two-more-with-math--c92c93-fig-1",
        "C9.3": "09_demo.md#two-more-with-math--c92c93-fig-1",
    }  # C9.4 sits in a code comment


def test_reproduction_notes_take_lead_and_first_sentence(repo):
    notes = book.reproduction_notes(repo / "09_demo.md")
    assert [n.title for n in notes] == ["Sign.", "Fig. 6.", "Warm-up."]
    assert notes[0].summary == "The paper says f is the log posterior."
    assert notes[1].summary == "The root is 0.777, see Eq. (3) above."
    assert notes[2].summary == ""  # pastes a glued value: only valid on its own page
    page = book.reproduction_notes_markdown(repo)
    assert page.startswith("### [A demo chapter](09_demo.md#reproduction-notes)")
    assert "- **Warm-up.** (computed values: see the chapter)" in page


def test_a_note_without_bold_lead_is_an_error(tmp_path):
    path = tmp_path / "01_x.md"
    path.write_text("# T\n\n## Reproduction notes\n\n- plain bullet.\n")
    with pytest.raises(ValueError, match="bold lead"):
        book.reproduction_notes(path)


def test_chapter_title_and_label(repo):
    assert book.chapter_title(repo / "09_demo.md") == ("A demo chapter", "ch-demo")


def test_the_books_own_chapters_link_their_claims():
    links = book.claim_links()
    assert links["C3.4"].startswith("03_symmetries.md#")
    assert all(
        path in [p.name for p in book.chapter_paths()]
        for path in {link.split("#")[0] for link in links.values()}
    )
