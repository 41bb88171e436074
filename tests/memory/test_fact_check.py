"""memory.maintenance.fact_check: when a statement is covered (a near paraphrase that keeps its
numbers, names, codes, dates, rare words and nouns, and its negation), and what a rewrite carries.
Real embeddings (the local model); no database."""

from __future__ import annotations

import pytest

from memory.maintenance import fact_check
from memory.maintenance.statements import standalone_of

# Real embeddings: paraphrases are told by the model's cosine.
pytestmark = pytest.mark.real_embeddings


def covered(statement: str, by: str) -> bool:
    checked = fact_check.statements_check([(1, statement)], [(2, by)])
    return not fact_check.lost(checked)


@pytest.mark.parametrize(
    ("statement", "by"),
    [
        ("Maria works at Acme in Oslo.", "In Oslo, Maria works at Acme."),
        ("Maria Lind has a peanut allergy.", "Maria Lind has a peanut allergy, a bad one."),
        (
            "Kenji Sato prefers Figma for building mockups.",
            "For building mockups, Kenji Sato prefers Figma.",
        ),
        ("We deploy the billing service each Friday afternoon.",
         "The billing service deploys every Friday afternoon."),
        ("Maria does not like espresso.", "Maria dislikes espresso."),
    ],
)  # fmt: skip
def test_a_paraphrase_is_covered(statement: str, by: str) -> None:
    assert covered(statement, by)


@pytest.mark.parametrize(
    ("statement", "by", "why"),
    [
        ("Maria's phone number is 555-0142.", "Maria's phone number is 555-0199.", "number"),
        ("Tom uses Python 3.11.", "Tom uses Python 3.12.", "version"),
        ("The meeting is at 3pm.", "The meeting is at 4pm.", "time"),
        ("Tom lives in Berlin.", "Tom lives in Munich.", "name"),
        ("Tom Berg is allergic to latex.", "Aisha Khan is allergic to latex.", "person"),
        ("Her badge code is QX-4471.", "Her badge code is QX-4417.", "code"),
        ("Maria was born on 14 March 1988.", "Maria was born on 14 March 1989.", "date"),
        ("Maria drinks kombucha daily.", "Maria drinks kefir daily.", "rare word"),
        (
            "The mobile team's coffee machine is on the second floor.",
            "The platform team's coffee machine is on the second floor.",
            "noun",
        ),
        ("Maria likes espresso.", "Maria dislikes espresso.", "negation"),
        ("Maria bought a Volvo.", "Maria sold a Volvo.", "verb"),
        ("Tom joined the billing team.", "Tom left the billing team.", "verb"),
        ("The backup runs before the deploy.", "The backup runs after the deploy.", "order"),
        ("Maria is allergic to peanuts.", "Maria is not allergic to peanuts.", "negation"),
    ],
)
def test_a_statement_that_loses_a_token_or_flips_is_not_covered(
    statement: str, by: str, why: str
) -> None:
    assert not covered(statement, by), why


def test_a_synonym_is_not_a_cover_but_is_carried() -> None:
    # The embedding model calls them the same; the words differ, so nothing is taken for
    # granted: the statement is carried (said twice rather than lost).
    assert not covered("Maria works at Acme in Oslo.", "Maria is employed by Acme in Oslo.")


def test_key_tokens_are_numbers_names_codes_dates_and_words() -> None:
    keys = fact_check.key_tokens("Maria Lind drinks kombucha at 9:15 near gate B-12 on 3 May")
    assert {"maria", "lind", "kombucha", "9:15", "b-12", "3", "may", "gate"} <= keys
    assert "drink" in keys  # "drinks" is not "sells": verbs count
    assert fact_check.key_tokens("Maria has a dog") == {"maria", "dog"}  # a light verb does not
    # A sentence's first word is a name only when it is not a function word.
    assert "the" not in fact_check.key_tokens("The cat sleeps")
    assert "oslo" in fact_check.key_tokens("Oslo is cold")


def test_a_pronoun_stands_for_its_entrys_subject() -> None:
    maria = "Maria Lind works as a nurse in Oslo. She is allergic to latex."
    aisha = "Aisha Khan works as a nurse in Oslo. She is allergic to latex."
    checked = fact_check.statements_check([(1, maria)], [(2, aisha)])
    assert [c.statement.text for c in fact_check.lost(checked)] == [
        "Maria Lind works as a nurse in Oslo",
        "She is allergic to latex",
    ]
    same = "In Oslo, Maria Lind works as a nurse. She is allergic to latex."
    assert not fact_check.lost(fact_check.statements_check([(1, maria)], [(2, same)]))


def test_carrying_adds_each_uncovered_statement_once_with_its_subject() -> None:
    kept = "Maria Lind works as a nurse at the Oslo university hospital."
    absorbed = [
        (1, "Maria Lind is a nurse at the Oslo university hospital and is allergic to peanuts."),
        (2, "Maria Lind works as a nurse at the Oslo university hospital and is allergic to "
            "peanuts."),
        (3, "Maria Lind works as a nurse at the Oslo university hospital and dislikes espresso."),
    ]  # fmt: skip
    checked = fact_check.statements_check(absorbed, [(9, kept)], carry_into=9)
    assert not fact_check.lost(checked)
    carried = [c.alone for c in checked if c.carried]
    assert carried == ["Maria Lind is allergic to peanuts", "Maria Lind dislikes espresso"]
    text = fact_check.carried_text(kept, checked)
    assert text == (
        "Maria Lind works as a nurse at the Oslo university hospital. Maria Lind is allergic "
        "to peanuts. Maria Lind dislikes espresso."
    )
    # The second mention of the allergy is covered by the carried one; JSON for the review.
    second = next(c for c in checked if c.entry_id == 2 and "peanuts" in c.statement.text)
    assert second.covered_by == (9, "Maria Lind is allergic to peanuts")
    item = second.as_json()
    assert item["text"] == "is allergic to peanuts" and item["carried"] is False
    assert absorbed[1][1][second.statement.start : second.statement.end] == item["text"]
    assert (item["start"], item["end"]) == (second.statement.start, second.statement.end)
    # What the rewrite says covers every absorbed statement again (the apply's check).
    assert not fact_check.lost(fact_check.statements_check(absorbed, [(9, text)]))


def test_standalone_statements_carry_their_subject() -> None:
    alone = [a for _, a in standalone_of("In Bergen, Tom Berg works as a nurse and reports to "
                                         "Clara Jansen, but never works weekends.")]  # fmt: skip
    assert alone == [
        "In Bergen, Tom Berg works as a nurse",
        "Tom Berg reports to Clara Jansen",
        "Tom Berg never works weekends",
    ]
    # A pronoun stays (its antecedent is not guessed); no subject found: the sentence.
    assert [a for _, a in standalone_of("Tom met Ann; he argued.")][1] == "he argued"
    assert [a for _, a in standalone_of("Quickly then, and is gone.")] == [
        "Quickly then",
        "Quickly then, and is gone",
    ]
