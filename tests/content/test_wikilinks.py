"""Wikilink parsing, slugs and rewriting: pure functions, no database."""

from __future__ import annotations

import pytest

from content.wikilinks import code_ranges, link_text, normalise_title, parse, rewrite, slugify


def targets(text: str) -> list[str]:
    return [link.target for link in parse(text)]


def test_plain_and_piped_links() -> None:
    links = parse("See [[Feature Guide]] and [[Feature Guide|the guide]].")
    assert [(link.target, link.display) for link in links] == [
        ("Feature Guide", None),
        ("Feature Guide", "the guide"),
    ]
    text = "x [[A|b]] y"
    assert link_text(text, parse(text)[0]) == "[[A|b]]"


def test_whitespace_inside_links_is_trimmed_and_empty_links_are_not_links() -> None:
    assert targets("[[  Spaced  Out |  shown ]]") == ["Spaced  Out"]
    assert parse("[[  Spaced |  shown ]]")[0].display == "shown"
    assert targets("[[]] [[ ]] [[ |text]] [[#Heading]]") == []


def test_a_pipe_in_the_display_text_is_kept_and_anchors_are_split_off() -> None:
    link = parse("[[Page#Setup|read setup]]")[0]
    assert (link.target, link.anchor, link.display) == ("Page", "Setup", "read setup")
    assert parse("[[A|b|c]]")[0].display == "b|c"


def test_nested_brackets_link_only_the_innermost() -> None:
    assert targets("[[a [[b]] c]]") == ["b"]
    assert targets("[[[Triple]]]") == ["Triple"]
    assert targets("[[Open [[Close]]") == ["Close"]


def test_line_breaks_end_a_link() -> None:
    assert targets("[[Two\nLines]]") == []


def test_escaped_brackets_are_text() -> None:
    assert targets(r"\[[Not a link]] but [[Real]]") == ["Real"]
    assert targets(r"\\[[Escaped backslash then link]]") == ["Escaped backslash then link"]


def test_links_in_inline_code_are_ignored() -> None:
    assert targets("`[[Code]]` and [[Prose]]") == ["Prose"]
    assert targets("``a ` [[Code]] `` then [[After]]") == ["After"]
    # An unmatched backtick is literal text: the link after it counts.
    assert targets("a ` b [[Linked]]") == ["Linked"]


def test_links_in_fenced_code_blocks_are_ignored() -> None:
    text = "[[Before]]\n```python\nx = '[[Inside]]'\n```\n[[After]]\n~~~\n[[Tilde]]\n~~~\n"
    assert targets(text) == ["Before", "After"]
    # A shorter fence does not close a longer one; an unclosed fence runs to the end.
    assert targets("````\n```\n[[Still code]]\n````\n[[Out]]") == ["Out"]
    assert targets("```\n[[Unclosed]]") == []
    assert code_ranges("plain") == []


def test_slug_rule_is_the_seeds_for_ascii_and_keeps_other_scripts() -> None:
    assert slugify("Feature Development Guide") == "feature-development-guide"
    assert slugify("  What's  new? (2025)  ") == "whats-new-2025"
    assert slugify("snake_case-Title") == "snakecase-title"
    assert slugify("Café Ωmega") == "café-ωmega"
    assert slugify("!!!") == ""


def test_titles_compare_without_case_or_spacing() -> None:
    assert normalise_title("  Feature   GUIDE ") == normalise_title("feature guide")
    assert normalise_title("Straße") == normalise_title("STRASSE")


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        ("[[Old]] and [[old|shown]]", "[[New]] and [[New|shown]]", 2),
        ("[[Old#Part|x]] [[Other]]", "[[New#Part|x]] [[Other]]", 1),
        ("[[old]] `[[Old]]`", "[[New]] `[[Old]]`", 1),
        ("no links", "no links", 0),
    ],
)
def test_rewrite_points_links_at_the_new_title(text: str, expected: str, count: int) -> None:
    assert rewrite(text, titles={"old"}, slugs={"old"}, new_title="New") == (expected, count)
