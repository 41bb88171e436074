"""Query shape: does a question ask along a relation chain, so that the entity it names is
where the answer starts, not where it is? ("Where was the person who runs the Harbor Library
born?": the library's passage names the bridge, Jonas Lind; his passage answers.)

A chain is a noun phrase defined by a relation inside a question that asks something else of
it: a relative clause ("the person who runs X", "the company that acquired X", "the city
where X was born"), a relational noun with "of" ("the founder of X", "the wife of the director
of X"), or a possessive ("X's founder", "Harbor Library's director"). A question that only
identifies that phrase ("Who is the person who runs X?", "What is the capital of France?") is
one hop: its answer is in X's own passage.

Offline and deterministic (regular expressions over English); ``rag.graph.retrieval`` and
``rag.graph.staged`` use it to let the walk lead (docs/rag.md, "Graph mode").
"""

from __future__ import annotations

import functools
import re

from rag.graph.questions import question_description, substitute

_RELATIONAL_NOUNS_TEXT = """
    founder founders co-founder leader head director directors owner owners chief ceo president
    chairman chair author creator inventor manager spouse wife husband partner mother father
    sister brother son daughter sibling parent child children friend colleague boss employer
    mentor teacher student successor predecessor capital headquarters hometown birthplace
    architect designer editor publisher producer developer maker coach captain member members
    curator principal dean mayor governor owner neighbour neighbor sponsor host organiser
    organizer"""
_RELATIONAL = "|".join(sorted(set(_RELATIONAL_NOUNS_TEXT.split()), key=len, reverse=True))
_RELATIVE = re.compile(
    r"\b(?:the|a|an)\s+(?:[\w-]+\s+){0,2}?(?:who|whom|whose|that|which|where)\s+(?!is\b|was\b)"
    r"[\w-]+",
    re.IGNORECASE,
)
_OF = re.compile(rf"\b(?:the|a|an)\s+(?:[\w-]+\s+)?(?:{_RELATIONAL})\s+of\s+\S", re.IGNORECASE)
# Any "the <noun> of <a name or another phrase>" ("the alma mater of Viktor Lorby").
_OF_NAME = re.compile(
    r"\b(?:the|a|an)\s+(?:[\w-]+\s+){0,2}?[\w-]+\s+of\s+(?:the\s+|a\s+|an\s+)?[A-Z]"
)
# A participle phrase: "the club started by Petra Kellhart", "the theatre led by X".
_PARTICIPLE = re.compile(
    r"\b(?:the|a|an)\s+(?:[\w-]+\s+){0,2}?(?:[\w-]+ed|run|led|founded|built|won|made|owned|"
    r"held|taught|written|known|seen|begun|begun|chosen|given|set|kept)\s+by\s+\S",
    re.IGNORECASE,
)
# "whoever started X", and a reduced relative clause: "the person Tobias Sandhart married".
_REDUCED = re.compile(
    r"\bwho(?:m)?ever\b|\b(?:the|a|an)\s+(?:person|man|woman|one|people|company|firm|club|"
    r"team|band|group|organisation|organization|place|city|town|country|school|university|"
    r"book|film|theatre|theater|museum|library|lab|hospital|clinic|shop|restaurant)\s+"
    r"[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*\s+(?!is\b|was\b|are\b|were\b)[a-z]+",
)
_POSSESSIVE = re.compile(rf"\b[\w-]+['\u2019]s?\s+(?:[\w-]+\s+)?(?:{_RELATIONAL})\b", re.IGNORECASE)
# "Who is the person who runs X?", "What is the capital of France?": the phrase is the answer.
_IDENTIFYING = re.compile(
    r"^\s*(?:who|what|which)(?:\s+\w+)?\s+(?:is|was|are|were)\s+(?:the|a|an)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:who|whom|that|which|of)\b[^?]*\??\s*$",
    re.IGNORECASE,
)
_IDENTIFYING_POSSESSIVE = re.compile(
    r"^\s*(?:who|what|which)\s+(?:is|was|are|were)\s+(?:[\w-]+\s+){0,3}?[\w-]+['\u2019]s?\s+"
    r"[\w-]+\s*\??\s*$",
    re.IGNORECASE,
)
_NESTED = re.compile(
    r"\b(?:who|whom|whose|that|which|where|of)\b.*\b(?:who|whom|whose|that|which|where|of)\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"^\s*(?:(?:in|at|on|for|from|with|by|to|of)\s+(?:which|what|whose|whom)\b|"
    r"(?:who|whom|whose|what|which|where|when|why|how|did|does|do|is|are|was|were|has|have|"
    r"had|can|could|would|will|name|list|tell)\b)",
    re.IGNORECASE,
)


def needs_hop(query: str) -> bool:
    """Whether the query asks along a relation chain (see the module's docstring)."""
    text = query.strip()
    if not text or not (text.endswith("?") or _QUESTION.match(text)):
        return False  # statements (a claim to verify) are no chain questions
    if _IDENTIFYING_POSSESSIVE.match(text):
        return False
    chained = any(
        pattern.search(text)
        for pattern in (_RELATIVE, _OF, _OF_NAME, _PARTICIPLE, _REDUCED, _POSSESSIVE)
    )
    if not chained:
        return False
    # An identifying question is one hop, unless its phrase nests another relation
    # ("Who is the wife of the man who runs X?").
    rest = text.split(None, 1)[-1]
    nested = any(p.search(rest) for p in (_NESTED, _REDUCED, _PARTICIPLE))
    return not (_IDENTIFYING.match(text) and not nested)


_TRAILING = frozenset(
    ["in", "at", "on", "to", "for", "with", "from", "into", "of", "by", "as", "the", "a", "an"]
)


def _core(form: str) -> str:
    """A relation's form without its trailing prepositions ("born in" -> "born")."""
    words = form.split()
    while words and words[-1] in _TRAILING:
        words.pop()
    return " ".join(words)


def query_relations(query: str) -> frozenset[str]:
    """The canonical relation types (``rag.graph.relation_lexicon.CANONICAL``) whose verbs,
    participles, role nouns or phrases (either way round) the query uses, trailing prepositions
    aside ("Where was the founder of X raised?": founded, grew_up_in): typed edges of those types
    lead the walk."""
    text = " " + " ".join(re.findall(r"[a-z][a-z'-]*", query.casefold())) + " "
    return frozenset(
        name for name, cores in _relation_cores() if any(core in text for core in cores)
    )


@functools.cache
def _relation_cores() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each canonical relation's name and its forms' cores longer than two letters, padded
    with spaces to match whole words."""
    from rag.graph.relation_lexicon import CANONICAL

    found = []
    for relation in CANONICAL:
        forms = (
            *relation.active,
            *relation.passive,
            *relation.roles,
            *relation.phrases,
            *relation.reverse_phrases,
        )
        cores = sorted({f" {core} " for form in forms if len(core := _core(form)) > 2})
        found.append((relation.name, tuple(cores)))
    return tuple(found)


# What a question asks once its descriptions are names: "Who is X?", "What was X?".
_BARE = re.compile(r"^\s*(?i:who|what|which)\s+(?:is|was|are|were)\s+[A-Z][\w .'-]*\?*\s*$")
_PLACEHOLDER = "Noa Quillmark"  # a name the question parser reads as one


def chain_relations(query: str, *, most: int = 3) -> list[frozenset[str]] | None:
    """The relations of each bridge of a chain question, the first hop first: each
    description the question parser finds around a named entity (``rag.graph.questions``,
    which agentic rounds read it with too) is replaced by a name and the question read again. "Which
    company employs the director of the library where Ulrik works?": [works_at], [leads]. A
    description that is all the question asks ("Who is the employer of the sibling of X?":
    the employer) is the answer, not a bridge. None: the question has no description."""
    text, found = query, []
    for _ in range(most):
        description = question_description(text)
        if description is None:
            break
        found.append(query_relations(description.text))
        text = substitute(text, description, _PLACEHOLDER)
    if len(found) > 1 and _BARE.match(text):
        found.pop()
    return found or None


def first_hop_relations(query: str) -> frozenset[str] | None:
    """The relations of a chain question's first hop: those the description around the named
    entity states ("works_at" in "Who runs the employer of Vera Ranvik?", where "runs" is the
    last hop's); empty when the description names no known relation; None when the question
    has none (``chain_relations``)."""
    chain = chain_relations(query, most=1)
    return None if chain is None else chain[0]
