"""memory.maintenance.statements: the split that upkeep's fact check and the review queue share."""

from __future__ import annotations

import pytest

from memory.maintenance.statements import statements_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Maria works at Acme in Oslo and is allergic to peanuts. She dislikes espresso.",
            ["Maria works at Acme in Oslo", "is allergic to peanuts", "She dislikes espresso"],
        ),
        # "and" between two nouns joins them; "but" and ";" always cut.
        (
            "Alice likes salt and pepper, but hates vinegar",
            ["Alice likes salt and pepper", "hates vinegar"],
        ),
        ("Tom and Jerry met; they argued", ["Tom and Jerry met", "they argued"]),
        # Abbreviations, versions and decimals do not end a sentence.
        (
            "Dr. Lind runs v2.3.1 at 3.5 GHz. It works.",
            ["Dr. Lind runs v2.3.1 at 3.5 GHz", "It works"],
        ),
        ("", []),
        (" ; , ", []),
    ],
)
def test_statements_of(text: str, expected: list[str]) -> None:
    assert [s.text for s in statements_of(text)] == expected


def test_offsets_point_into_the_text() -> None:
    text = "Bob is a nurse and is allergic to peanuts; he lives in Kiruna."
    for statement in statements_of(text):
        assert text[statement.start : statement.end] == statement.text
