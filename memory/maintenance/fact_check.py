"""The fact check of upkeep (docs/memory/maintenance.md, "Nothing automatic loses a fact"): an entry
may be archived into what stays current only if each of its statements is covered by a current
statement.

A statement (``memory.maintenance.statements``: sentences, then clauses at ";", "but" and a
predicate-joining "and"; a clause without a subject compared and carried with its sentence's
subject) is *covered* by a current statement when both hold:

- the two are near paraphrases: the cosine similarity of their embeddings (the configured
  provider's, one batch per check) is at least the dedup threshold
  (``MEMORY_DEDUP_SIMILARITY``, 0.92);
- the current statement keeps the statement's *key tokens*: its numbers and codes (any token
  with a digit or a symbol inside: "+47", "16.2", "HC-7146", "9:15"), its names and dates
  (capitalised words, except a sentence's first word when that is a function word such as "The"
  or "She"), and every other word that says something: nouns, adjectives, rare words and verbs,
  all but function words, adverbs of frequency ("daily", "usually") and light verbs (be, have,
  do, get, go, make, take). "Rare" is thus taken in its widest sense: the embedding model sees
  "Maria bought a Volvo" and "Maria sold a Volvo" as the same (cosine 0.97), so no word that
  could carry the fact is left to it. Words are compared by their Snowball stems ("peanuts"
  keeps "peanut"), numbers and codes exactly;
- and both say it, or both deny it: "not", "never", "no", "n't", "without"... in one and not
  the other is a different statement.

A statement led by a personal pronoun ("She is allergic to latex") is compared as it stands, but
for the key tokens its pronoun stands for its entry's subject (the subject of the entry's first
statement, "Maria Lind"): the names of that subject are keys it must keep, and a pronoun-led
current statement keeps the names of its own entry's subject. So "She is allergic to latex"
about Maria is not covered by the same words about Aisha. The text carried is never changed.

The rules were chosen on the fact-preservation set (docs/benchmarks-log.md, "Fact
preservation in upkeep"; every alternative tried is in docs/benchmarks-log.md).

Embeddings of statements are cached per process (model id and text), so that the check a plan
made and the check its apply repeats embed each statement once.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import snowballstemmer
from django.conf import settings

from core.embeddings import get_embedding_provider
from core.errors import Conflict
from memory.conversations.summaries import STOP_WORDS
from memory.maintenance.statements import (
    Statement,
    pronoun_led,
    standalone_of,
    subject_of,
    verb_form,
)
from memory.tuning import TUNING

# Two statements are near paraphrases at a cosine similarity of at least the dedup threshold
# (settings.MEMORY_DEDUP_SIMILARITY, 0.92), if the key-token and negation rules hold too. On
# the fact-preservation set (bench/memory/statement_coverage_sweep.py) the ``words`` rule let no
# statement of another fact through at any threshold from 0.70; lower thresholds cover more
# paraphrases (0.33 of paraphrase pairs at 0.70, 0.23 at 0.92), but what the tokens cannot see
# (who did what to whom) only the embedding can, so the threshold stays. The rule
# (which words besides numbers, codes and names a covering statement must keep: key_tokens) and
# the threshold are tunables: ``TUNING.facts`` (memory.tuning).
# Vectors kept for the check that an apply repeats after its plan.
CACHE_SIZE = 8192

_TOKEN = re.compile(r"[\w][\w.:/@#+'’&-]*[\w]|[\w]")
_NEGATIONS = frozenset(
    {"not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "without", "cannot"}
)
# Verbs that say "not" by themselves ("dislikes espresso" against "likes espresso").
_NEGATIVE_VERBS = frozenset(
    f"{verb}{ending}"
    for verb in ("dislike", "hate", "detest", "loathe", "avoid", "refuse", "lack", "miss")
    for ending in ("", "s", "d", "ed")
)
# Adverbs of time and frequency: a paraphrase may say "daily" for "every day".
_ADVERBS = frozenset(
    {"daily", "nightly", "weekly", "monthly", "yearly", "usually", "generally", "really",
     "very", "just", "still", "even", "ever", "mostly", "sometimes", "rarely", "regularly",
     "currently", "recently", "actually", "probably", "typically", "normally", "mainly"}
)  # fmt: skip
# Verbs a paraphrase may add or drop without changing what is said ("takes the bus").
_LIGHT_VERBS = frozenset(
    f"{verb}{ending}"
    for verb in ("be", "have", "has", "had", "do", "does", "did", "get", "got", "go", "went",
                 "make", "made", "take", "took", "gets", "goes", "makes", "takes", "going",
                 "getting", "making", "taking", "having", "being", "been", "gone", "taken")
    for ending in ("",)
)  # fmt: skip
_DIRECTIONS = frozenset(
    {"after", "before", "above", "below", "under", "over", "up", "down", "off", "out",
     "against", "during", "until", "more", "less", "few", "same", "other", "only", "first",
     "last", "next", "into", "onto", "from"}
)  # fmt: skip
# After these, a verb's form is a noun ("the plan", "at work", "of building").
_NOUN_MARKERS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "my", "your", "his", "her", "its",
     "our", "their", "each", "every", "some", "any", "no", "of", "in", "at", "on", "for",
     "with", "from", "about", "by"}
)  # fmt: skip
# fmt: off
# A capitalised first word that is one of these is only capitalised because it comes first.
_FUNCTION_WORDS = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its",
    "our", "their", "i", "you", "he", "she", "we", "they", "it", "there", "here", "in", "on",
    "at", "for", "from", "to", "of", "by", "with", "when", "while", "after", "before", "if",
    "every", "each", "all", "some", "any", "no", "not", "and", "but", "or", "so", "as",
    "also", "then", "now", "today", "yesterday", "tomorrow", "always", "never", "usually",
    "often", "what", "who", "where", "which", "how", "why", "one", "both", "most", "many",
})
# fmt: on
_ENDINGS = ("'s", "’s", "ies", "es", "s", "ed", "d", "ing")


@dataclass(frozen=True)
class Checked:
    """One statement of an entry and what covers it (None: nothing current says it)."""

    entry_id: int
    statement: Statement
    alone: str  # the text compared (and carried): the statement with its subject
    covered_by: tuple[int, str] | None
    carried: bool = False

    def as_json(self) -> dict[str, object]:
        covered = self.covered_by
        return {
            "entry_id": self.entry_id,
            "text": self.statement.text,
            "start": self.statement.start,
            "end": self.statement.end,
            "covered_by": {"entry_id": covered[0], "text": covered[1]} if covered else None,
            "carried": self.carried,
        }


# --- tokens -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _vocabulary() -> frozenset[str]:
    """The whole words of the local embedding model's WordPiece vocabulary (shipped with
    Engram: the lexicon behind "rare", whatever provider embeds)."""
    from core.embeddings.local import default_tokenizer_path

    with default_tokenizer_path().open(encoding="utf-8") as handle:
        vocab = json.load(handle)["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha() and not w.startswith("##"))


_stemmer = snowballstemmer.stemmer("english")
_stem_lock = threading.Lock()


def _stem(word: str) -> str:
    with _stem_lock:  # Snowball's stemmer objects are not thread-safe
        return str(_stemmer.stemWord(word))


def _common(word: str) -> bool:
    vocabulary = _vocabulary()
    if word in vocabulary:
        return True
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            root = word[: -len(ending)]
            if root in vocabulary or root + "e" in vocabulary or root + "y" in vocabulary:
                return True
    return False


def _norm(token: str) -> str:
    token = token.lower().replace("’", "'")
    if token.endswith("'s"):
        token = token[:-2]
    return token


def _key(token: str) -> str:
    """How a token is compared: numbers and codes exactly, words by their stem."""
    token = _norm(token)
    return token if not token.isalpha() else _stem(token)


def key_tokens(text: str, rule: str | None = None) -> frozenset[str]:
    """The tokens of ``text`` a covering statement must keep (compared as ``_key`` makes them):
    numbers and codes, names, and per ``rule`` (``TUNING.facts.key_rule`` by default; the others
    are the alternatives measured): ``words`` every word but function words, adverbs of
    frequency and light verbs; ``content`` every noun or adjective (not a form of a common verb),
    ``content+rare`` those and the rare words, ``rare`` the rare words only, ``names`` nothing
    more."""
    rule = rule or TUNING.facts.key_rule
    keys: set[str] = set()
    previous = ""
    for n, match in enumerate(_TOKEN.finditer(text)):
        raw = match.group(0)
        word, before, previous = _norm(raw), previous, _norm(raw)
        if not word.isalpha():
            if any(c.isdigit() for c in word) or not word.replace("'", "").isalpha():
                keys.add(_key(raw))
            continue
        if raw[0].isupper() and not (n == 0 and word in _FUNCTION_WORDS):
            keys.add(_key(raw))
            continue
        rare = "rare" in rule and len(word) >= 3 and not _common(word)
        content = rule.startswith("content") and _content(word, before)
        if rare or content or (rule == "words" and _word(word)):
            keys.add(_key(raw))
    return frozenset(keys)


def _word(word: str) -> bool:
    """A word that says something: not a function word, an adverb of frequency or a light
    verb (be, have, do, get, go, make, take); verbs count ("bought" is not "sold"), and so do
    the words of order and direction ("before", "after", "up", "out")."""
    if word in _DIRECTIONS:
        return True
    return not (
        word in STOP_WORDS
        or word in _FUNCTION_WORDS
        or word in _ADVERBS
        or word in _LIGHT_VERBS
        or len(word) < 3
    )


def _content(word: str, before: str) -> bool:
    """A noun or an adjective: not a function word, an adverb of frequency, or a verb (a verb's
    form after a determiner or a preposition is a noun: "the search team", "at work")."""
    if word in STOP_WORDS or word in _FUNCTION_WORDS or word in _ADVERBS or len(word) < 3:
        return False
    return not verb_form(word) or before in _NOUN_MARKERS


def _all_tokens(text: str) -> frozenset[str]:
    return frozenset(_key(m.group(0)) for m in _TOKEN.finditer(text))


def negated(text: str) -> bool:
    """Whether ``text`` denies or dislikes (an odd number of negations and negative verbs):
    "does not like" and "dislikes" agree, "likes" and "dislikes" do not."""
    words = [_norm(m.group(0)) for m in _TOKEN.finditer(text)]
    flips = sum(1 for w in words if w in _NEGATIONS or w.endswith("n't"))
    flips += sum(1 for w in words if w in _NEGATIVE_VERBS)
    return flips % 2 == 1


# --- embeddings -------------------------------------------------------------------------------

_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()


def unit_vectors(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Unit vectors of ``texts`` by the configured provider: one ``embed_documents`` call for
    those not cached. Never call it inside a database transaction."""
    provider = get_embedding_provider()
    model = provider.model_id
    found: dict[str, np.ndarray] = {}
    with _cache_lock:
        for text in texts:
            vector = _cache.get((model, text))
            if vector is not None:
                found[text] = vector
    missing = list(dict.fromkeys(t for t in texts if t not in found))
    if missing:
        matrix = np.asarray(provider.embed_documents(missing), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        with _cache_lock:
            for text, row in zip(missing, matrix / norms, strict=True):
                found[text] = row
                _cache[(model, text)] = row
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return found


# --- the check --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Said:
    """A statement that stays current (it may cover others)."""

    entry_id: int
    alone: str
    keys: frozenset[str]
    tokens: frozenset[str]
    negated: bool


def _said(entry_id: int, alone: str, subject: frozenset[str] = frozenset()) -> _Said:
    keys, tokens = key_tokens(alone), _all_tokens(alone)
    if subject and pronoun_led(alone):
        keys, tokens = keys | subject, tokens | subject
    return _Said(entry_id, alone, keys, tokens, negated(alone))


def _names(text: str) -> frozenset[str]:
    """The names of ``text`` (capitalised words, but a first word that is a function word)."""
    return frozenset(
        _key(m.group(0))
        for n, m in enumerate(_TOKEN.finditer(text))
        if m.group(0)[0].isupper() and not (n == 0 and _norm(m.group(0)) in _FUNCTION_WORDS)
    )


def _statements(entry_id: int, text: str) -> list[tuple[Statement, _Said]]:
    """The statements of one entry, each as it is compared; a pronoun stands for the names of
    the entry's subject (or, without one, of its first statement)."""
    found = standalone_of(text)
    subject = subject_of(text)
    names = _names(subject) if subject else frozenset()
    if not names and found:
        names = _names(found[0][1])
    return [(s, _said(entry_id, alone, names)) for s, alone in found]


def statement_similarity() -> float:
    """The cosine similarity of near paraphrases: ``TUNING.facts.statement_similarity``, or the
    dedup threshold when that is None."""
    tuned = TUNING.facts.statement_similarity
    return float(settings.MEMORY_DEDUP_SIMILARITY if tuned is None else tuned)


def covers(candidate: _Said, said: _Said, similarity: float) -> bool:
    return (
        similarity >= statement_similarity()
        and said.keys <= candidate.tokens
        and said.negated == candidate.negated
    )


def _cover(said: _Said, current: Sequence[_Said], vectors: dict[str, np.ndarray]) -> _Said | None:
    best: tuple[float, _Said] | None = None
    for candidate in current:
        similarity = float(vectors[said.alone] @ vectors[candidate.alone])
        if covers(candidate, said, similarity) and (best is None or similarity > best[0]):
            best = (similarity, candidate)
    return best[1] if best else None


def statements_check(
    archived: Iterable[tuple[int, str]],
    current: Iterable[tuple[int, str]],
    *,
    carry_into: int | None = None,
) -> list[Checked]:
    """Each statement of the ``archived`` entries ((id, text)) with what covers it among the
    statements of the ``current`` ones. With ``carry_into`` (the kept entry's id), a statement
    nothing covers is *carried*: it becomes current itself (so a second entry saying it again
    is covered by it) and is marked ``carried``; ``carried_text`` writes them out."""
    current_said = [said for i, text in current for _, said in _statements(i, text)]
    pending = [(s, said) for i, text in archived for s, said in _statements(i, text)]
    vectors = unit_vectors([s.alone for s in current_said] + [s.alone for _, s in pending])
    checked: list[Checked] = []
    for statement, said in pending:
        cover = _cover(said, current_said, vectors)
        if cover is not None:
            checked.append(
                Checked(said.entry_id, statement, said.alone, (cover.entry_id, cover.alone))
            )
        elif carry_into is not None:
            checked.append(Checked(said.entry_id, statement, said.alone, None, carried=True))
            current_said.append(_Said(carry_into, said.alone, said.keys, said.tokens, said.negated))
        else:
            checked.append(Checked(said.entry_id, statement, said.alone, None))
    return checked


def lost(checked: Iterable[Checked]) -> list[Checked]:
    """The statements nothing current covers (and that were not carried)."""
    return [c for c in checked if c.covered_by is None and not c.carried]


def carried_text(text: str, checked: Iterable[Checked]) -> str:
    """``text`` with the carried statements appended, each as a sentence of its own."""
    carried = [c.alone for c in checked if c.carried]
    if not carried:
        return text
    base = text.rstrip()
    if base and base[-1] not in ".!?":
        base += "."
    sentences = [s[0].upper() + s[1:] + ("" if s[-1] in ".!?" else ".") for s in carried]
    return " ".join([base, *sentences]) if base else " ".join(sentences)


def statements_json(checked: Iterable[Checked]) -> list[dict[str, object]]:
    return [c.as_json() for c in checked]


def refusal(lost_statements: Sequence[Checked]) -> Conflict:
    """409 ``would_lose_facts``: the change would archive these statements with nothing current
    saying them."""
    return Conflict(
        "This change would archive statements that nothing current says; it is refused.",
        code="would_lose_facts",
        details={
            "statements": [
                {k: v for k, v in c.as_json().items() if k not in {"covered_by", "carried"}}
                for c in lost_statements
            ]
        },
    )
