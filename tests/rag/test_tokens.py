"""Token counts from the per-word cache equal the tokenizer's own counts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rag.tokens import CONTROL_SPACES, count_tokens, count_tokens_by_words

SAMPLES = [
    "",
    "   ",
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "- [2023-05-08] Melanie: Wow, that's great!!! (really)",
    "naïve café Ünïcödé ÅNGSTRÖM résumé",
    "東京タワーに行きました。漢字とかなが混ざる文",
    "emoji 🙂🙂 and symbols ∑∫√ and a URL https://example.com/a/very/long/path?x=1&y=2",
    "a\x0cb c\x1cd e\x85f tab\tnew\nline\r\nend",
    "x" * 400,
    "supercalifragilisticexpialidocious-antidisestablishmentarianism_identifier_name",
]


def test_counts_by_words_equal_the_tokenizers_on_varied_text() -> None:
    assert count_tokens_by_words(SAMPLES) == count_tokens(SAMPLES)
    # A second call reads the cache: still equal.
    assert count_tokens_by_words(SAMPLES) == count_tokens(SAMPLES)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.one_of(
                st.characters(codec="utf-8", exclude_categories=["Cs"]),
                st.sampled_from(list(CONTROL_SPACES + " \t\n\u3000\u00a0")),
            ),
            max_size=80,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_counts_by_words_equal_the_tokenizers_on_any_text(texts: list[str]) -> None:
    assert count_tokens_by_words(texts) == count_tokens(texts)
