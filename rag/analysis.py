"""Text analysis for the BM25 index: lower-case word tokens, stop words, Snowball stems; and
query analysis (``analyze_query``)."""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

from rag.tuning import TUNING

MAX_TERM_LENGTH = 64

# Lucene's English stop words (the classic analyzer's set).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
# Query analysis: words that ask rather than name (question words, auxiliaries, pronouns). They
# are indexed like any word, but a question's own are dropped when it names anything else:
# "What did she research?" searches for "research" (``TUNING.keyword.query_function_words``).
FUNCTION_WORDS = frozenset(
    [
        "what",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "has",
        "have",
        "had",
        "having",
        "was",
        "were",
        "been",
        "being",
        "am",
        "can",
        "could",
        "would",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "i",
        "me",
        "my",
        "mine",
        "myself",
        "you",
        "your",
        "yours",
        "yourself",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "we",
        "us",
        "our",
        "ours",
        "they",
        "them",
        "theirs",
        "its",
        "itself",
        "any",
        "some",
        "about",
        "from",
        "up",
        "out",
        "over",
        "so",
        "than",
        "too",
        "very",
        "just",
        "also",
    ]
)
_TOKEN = re.compile(r"\w+", re.UNICODE)
# How a question opens (a query holding "?" asks too).
_OPENERS = frozenset(
    ["what", "when", "where", "who", "whom", "whose", "which", "why", "how", "is", "are", "was",
     "were", "do", "does", "did", "can", "could", "will", "would", "should", "has", "have", "had"]
)  # fmt: skip


def asks(text: str) -> bool:
    """Whether a query is a question: it holds "?" or opens with a question word or an
    auxiliary. A statement's auxiliaries and pronouns may be its content ("Vitamin D has no
    effect on ..."): only a question's frame is dropped."""
    first = _TOKEN.search(text.lower())
    return "?" in text or (first is not None and first.group(0) in _OPENERS)


# Query analysis: words by which a question asks for several answers ("What do they both
# like?", "How many times ...?", "What are some ...?").
_SEVERAL = frozenset(["both", "all", "many", "some", "ways", "times", "kinds", "types"])
# The question's own verb after its object: "What books *has* she read?".
_AUXILIARIES = frozenset(
    ["do", "does", "did", "has", "have", "had", "is", "are", "was", "were", "can", "could",
     "will", "would", "shall", "should", "may", "might", "must"]
)  # fmt: skip
# How far after "what" / "which" the plural object may be ("Which classical musicians does").
_PLURAL_REACH = 3


def asks_for_several(text: str) -> bool:
    """Whether a question asks for several answers: it holds a word of ``_SEVERAL``, or it
    opens "what" / "which" + a plural noun (within ``_PLURAL_REACH`` words) + an auxiliary:
    "What books has she read?", "Which events did he attend?"; not "What book did she read?"
    nor "What does she read?". A word of more than three letters ending in "s" but not "ss",
    "us" or "is" counts as plural; the auxiliary after it tells a noun from a verb ("Which song
    motivates her?"). English only, and a heuristic: a singular noun ending in "s" ("What
    news did ...") passes for a plural."""
    if not asks(text):
        return False
    words = _TOKEN.findall(text.lower())
    if _SEVERAL.intersection(words):
        return True
    if len(words) < 3 or words[0] not in ("what", "which"):
        return False
    for position in range(1, min(1 + _PLURAL_REACH, len(words) - 1)):
        word = words[position]
        if word in _AUXILIARIES:
            return False
        plural = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))
        if plural and words[position + 1] in _AUXILIARIES:
            return True
    return False


# snowballstemmer hands out PyStemmer's C implementation of the same Snowball algorithm when it
# is installed (a dependency): identical stems, about twenty times faster.
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def analyze(text: str) -> list[str]:
    """Lower-case word tokens without stop words, Porter2-stemmed: the index and query terms."""
    terms = []
    for token in _TOKEN.findall(text.lower()):
        if token in STOP_WORDS or len(token) > MAX_TERM_LENGTH:
            continue
        terms.append(_stem(token))
    return terms


def analyze_query(text: str) -> list[str]:
    """A query's terms: ``analyze``; for a question (``asks``), less its function words when
    anything else is left."""
    if not TUNING.keyword.query_function_words or not asks(text):
        return analyze(text)
    words = [t for t in _TOKEN.findall(text.lower()) if t not in FUNCTION_WORDS]
    content = analyze(" ".join(words))
    return content or analyze(text)
