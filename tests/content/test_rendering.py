"""The authors' preview (markdown to sanitised HTML, wikilinks as links) and "link it" (the first
plain mention made a wikilink): pure functions, no database."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import pytest

from content import wikilinks
from content.rendering import LinkTarget, render

NAMES = ["Harbour Notes", "Port Log"]


def link(text: str, names: Sequence[str] = NAMES, title: str = "Harbour Notes") -> str | None:
    return wikilinks.link_first_mention(text, names=names, title=title)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("See Harbour Notes today.", "See [[Harbour Notes]] today."),
        # Another case, an alias, other spacing: the mention is kept as display text.
        ("the harbour notes say", "the [[Harbour Notes|harbour notes]] say"),
        ("Read the PORT LOG.", "Read the [[Harbour Notes|PORT LOG]]."),
        ("Harbour\n  Notes again", "[[Harbour Notes]] again"),
        # Only the first plain mention.
        ("Harbour Notes and Harbour Notes", "[[Harbour Notes]] and Harbour Notes"),
        # Whole words only.
        ("Harbour Notesbook, then Harbour Notes.", "Harbour Notesbook, then [[Harbour Notes]]."),
        ("xHarbour Notes, Harbour Notes", "xHarbour Notes, [[Harbour Notes]]"),
        # Not in code spans, code blocks, links, HTML tags or URLs.
        ("`Harbour Notes` vs Harbour Notes", "`Harbour Notes` vs [[Harbour Notes]]"),
        (
            "```\nHarbour Notes\n```\nHarbour Notes",
            "```\nHarbour Notes\n```\n[[Harbour Notes]]",
        ),
        ("~~~md\nHarbour Notes", None),  # an unclosed fence runs to the end
        ("[[Old Harbour Notes]] and Harbour Notes", "[[Old Harbour Notes]] and [[Harbour Notes]]"),
        ("[[Other|Harbour Notes]] is not it", None),
        ("[Harbour Notes](https://example.org/harbour-notes)", None),
        ('<abbr title="Harbour Notes">HN</abbr>', None),
        ("https://example.org/Harbour-Notes", None),
        ("Nothing here.", None),
    ],
)
def test_link_first_mention(text: str, expected: str | None) -> None:
    assert link(text) == expected


def test_link_first_mention_prefers_the_longest_name() -> None:
    assert link("Harbour Notes Archive", names=["Harbour Notes", "Harbour Notes Archive"]) == (
        "[[Harbour Notes|Harbour Notes Archive]]"
    )
    assert link("anything", names=["", "  "]) is None


def resolver(known: Mapping[str, LinkTarget]) -> object:
    asked: list[list[str]] = []

    def links(targets: Sequence[str]) -> Mapping[str, LinkTarget]:
        asked.append(list(targets))
        return {t: known[t] for t in targets if t in known}

    links.asked = asked  # type: ignore[attr-defined]
    return links


def test_wikilinks_render_as_links_and_broken_ones_are_marked() -> None:
    links = resolver(
        {
            "Harbour Notes": LinkTarget(href="/admin/content/page/7/change/", title="page"),
            "Drafts": LinkTarget(href="/admin/content/page/add/?title=Drafts", broken=True),
        }
    )
    html = render(
        "# Log\n\nSee [[Harbour Notes]], [[harbour notes|the notes]], [[Harbour Notes#Tides]],"
        " [[Drafts]] and [[Nowhere]].\n\nNot `[[In Code]]` nor \\[[Escaped]].\n\n"
        "```\n[[In Block]]\n```\n",
        links=links,  # type: ignore[arg-type]
    )
    assert links.asked == [["Harbour Notes", "harbour notes", "Drafts", "Nowhere"]]  # type: ignore[attr-defined]
    assert "<h1>Log</h1>" in html
    assert (
        '<a class="wikilink" href="/admin/content/page/7/change/" title="page"'
        ' rel="noopener noreferrer nofollow">Harbour Notes</a>'
    ) in html
    assert ">Harbour Notes › Tides</a>" in html
    assert '<a class="wikilink broken" href="/admin/content/page/add/?title=Drafts"' in html
    # Named nowhere and with nowhere to go: a marked span, not a link.
    assert '<span class="wikilink broken" title="No page or article has this title.">' in html
    assert "Nowhere</span>" in html
    assert "<code>[[In Code]]</code>" in html and "[[Escaped]]" in html
    assert "<pre><code>[[In Block]]\n</code></pre>" in html


def test_rendering_is_sanitised() -> None:
    hostile = (
        "<script>alert('x')</script>\n\n"
        "[click](javascript:alert(1)) [also](JaVaScRiPt:alert(1)) "
        '<a href="javascript:alert(2)" onclick="steal()">tag</a> '
        '<img src="x.png" onerror="alert(3)"> <iframe src="https://example.org"></iframe>\n\n'
        "<style>body { display: none }</style>\n\n"
        '<p class="errornote" style="color: red">styled</p>\n\n[[<b>Bold</b>|<i>x</i>]]\n\n'
        "[ok](https://example.org/page) <kbd>Ctrl</kbd> <details><summary>More</summary>"
        "</details>\n"
    )
    html = render(hostile, links=lambda targets: {})
    lowered = html.lower()
    for forbidden in ("<script", "onclick", "onerror", "<iframe", "<style"):
        assert forbidden not in lowered, forbidden
    # No URL of an attribute runs script (markdown leaves such a link as plain text).
    assert not re.search(r"""(href|src)\s*=\s*["']?\s*javascript:""", lowered)
    assert "[click](javascript:alert(1))" in html
    assert "alert('x')" not in html and "display: none" not in html
    assert 'class="errornote"' not in html and "style=" not in html
    # The link text of a wikilink is text, never markup.
    assert "<b>" not in html and "&lt;i&gt;x&lt;/i&gt;" in html
    # What is harmless stays.
    assert '<a href="https://example.org/page" rel="noopener noreferrer nofollow">ok</a>' in html
    assert "<kbd>Ctrl</kbd>" in html and "<summary>More</summary>" in html
    assert '<img src="x.png">' in html
