"""Late interaction: re-score a search's best candidates by how well each content word of the
query is matched by some token of the candidate.

A sentence vector is one point per text, so a question about "activities" and a turn about
pottery meet only if their averages do. Late interaction keeps every token: each query token's
contextual state is compared with each of the candidate's, the best match per query token kept,
and those maxima averaged (MaxSim, as ColBERT scores). It reads question and candidate
token by token, which is what a reranker adds, with the model Engram ships: all-MiniLM-L6-v2's
states before pooling. That model was trained for pooled sentence vectors, not for MaxSim, so
this is a weaker signal than a model trained for late interaction would give; measured on LoCoMo
dev by leave-one-conversation-out (docs/benchmarks-log.md, "Late interaction").

The cost is one forward pass over the candidates (``DEPTH`` of them: about 300 ms on two cores
for 30 chat turns; the states of texts scored lately are kept, ``StateCache``), so a space takes
it only in the modes that pay for depth anyway: the long-term entries' graph mode
(``SearchSpace.late_weight``). It always runs on the local model, whichever embedding provider is
configured: its token states are what it reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from core.embeddings import get_embedding_provider
from core.embeddings.local import LocalEmbeddingProvider
from core.process_cache import PerProcess
from rag.analysis import FUNCTION_WORDS, STOP_WORDS
from rag.search import RankedHit

# How many of the best candidates are re-scored (LoCoMo dev: 30, 50 and 100 rank alike, since a
# candidate below 30 seldom climbs into the first ten; docs/benchmarks-log.md).
DEPTH = 30
# Query tokens that name nothing: a question's function words and the index's stop words.
_QUIET = FUNCTION_WORDS | STOP_WORDS
# Whether only the query's content tokens are matched (docs/benchmarks-log.md, "Late interaction").
CONTENT_ONLY = True
# The least weight of a query token that every candidate has (``rarity_weights``).
RARITY_FLOOR = 0.1

_own_model: PerProcess[LocalEmbeddingProvider] = PerProcess(LocalEmbeddingProvider)


def late_model() -> LocalEmbeddingProvider:
    """The local model: the configured provider's when it is local, else one of its own."""
    provider = get_embedding_provider()
    if isinstance(provider, LocalEmbeddingProvider):
        return provider
    return _own_model.get()


def _content(token: str) -> bool:
    """A query token that names something: a word's first piece, not a function word."""
    return token[:1].isalnum() and token.lower() not in _QUIET


Read = tuple[tuple[str, ...], np.ndarray]  # a text's tokens and their states


class StateCache:
    """The tokens and token states of the texts scored last, kept (the states as float16)
    until ``max_tokens`` is passed, the least recently used dropped first. The same turns come
    back query after query in one conversation, and their states cost the model's pass; a
    text's states depend on its words only, so the text is the key. Shared by a process's
    threads."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.tokens = 0
        self._states: OrderedDict[str, Read] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._states)

    def get(self, text: str) -> Read | None:
        with self._lock:
            read = self._states.get(text)
            if read is not None:
                self._states.move_to_end(text)
            return read

    def put(self, text: str, tokens: Sequence[str], states: np.ndarray) -> None:
        with self._lock:
            if text in self._states or len(states) > self.max_tokens:
                return
            self._states[text] = (tuple(tokens), states.astype(np.float16, copy=False))
            self.tokens += len(states)
            while self.tokens > self.max_tokens:
                _, (dropped, _) = self._states.popitem(last=False)
                self.tokens -= len(dropped)


# About 25 MB a process (384 float16 values a token).
CACHE_TOKENS = 32_768
_cache = StateCache(CACHE_TOKENS)


def _states(query: str, texts: Sequence[str]) -> tuple[list[str], np.ndarray, list[Read]]:
    """The query's tokens and states, and each text's: the texts' from the cache where it has
    them, the rest with the query in one model call."""
    found: dict[str, Read] = {}
    for text in texts:
        cached = _cache.get(text)
        if cached is not None:
            found[text] = (cached[0], cached[1].astype(np.float32))
    missing = list(dict.fromkeys(text for text in texts if text not in found))
    (query_tokens, query_states), *computed = late_model().token_states([query, *missing])
    for text, (tokens, states) in zip(missing, computed, strict=True):
        # Rounded as the cache keeps them: a text scores the same, cached or not.
        rounded = states.astype(np.float16)
        _cache.put(text, tokens, rounded)
        found[text] = (tuple(tokens), rounded.astype(np.float32))
    return query_tokens, query_states, [found[text] for text in texts]


def rarity_weights(query_tokens: Sequence[str], candidates: Sequence[Sequence[str]]) -> np.ndarray:
    """Each query token's weight in the mean: its inverse document frequency among the
    candidates (BM25's, ``log((n + 1) / (df + 0.5))``, at least ``RARITY_FLOOR``), the weights
    summing to 1. A word every candidate has (the speaker a question names, whose turns the
    speaker lift has put first) tells the candidates apart by nothing; a word few of them have
    is what the question turns on."""
    sets = [set(tokens) for tokens in candidates]
    n = len(sets)
    weights = np.asarray(
        [
            max(RARITY_FLOOR, float(np.log((n + 1) / (sum(t in c for c in sets) + 0.5))))
            for t in query_tokens
        ],
        dtype=np.float32,
    )
    return weights / weights.sum()


def late_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Each text's MaxSim score for ``query``: the mean over the query's content tokens (every
    token when none is content) of their best cosine with a token of the text, weighted by
    the tokens' rarity among ``texts`` (``rarity_weights``), -1 to 1. A text's score depends
    on the texts scored with it. Their states come from ``StateCache`` when it has them."""
    if not texts:
        return []
    query_tokens, query_states, candidates = _states(query, texts)
    keep = [i for i, token in enumerate(query_tokens) if _content(token) or not CONTENT_ONLY]
    if keep:
        query_states = query_states[keep]
        query_tokens = [query_tokens[i] for i in keep]
    if not len(query_states):
        return [0.0] * len(texts)
    weights = rarity_weights(query_tokens, [tokens for tokens, _ in candidates])
    return [
        float((query_states @ states.T).max(axis=1) @ weights) if len(states) else 0.0
        for _, states in candidates
    ]


def late_rerank(
    ranked: list[RankedHit],
    texts: Mapping[int, str],
    *,
    query: str,
    weight: float,
    depth: int = DEPTH,
) -> list[RankedHit]:
    """The first ``depth`` hits (those with a text) gain ``weight`` times their late score above
    the lowest of them; the scores are then divided by the best when it passes 1, as the
    speaker lift does, and the list re-sorted. Each re-scored hit keeps its ``late_score``."""
    head = [hit for hit in ranked[:depth] if hit.unit_id in texts]
    if weight <= 0 or len(head) < 2:
        return ranked
    scores = np.asarray(late_scores(query, [texts[hit.unit_id] for hit in head]))
    low = float(scores.min())
    for hit, score in zip(head, scores, strict=True):
        hit.late_score = float(score)
        hit.score += weight * (float(score) - low)
    best = max(hit.score for hit in ranked)
    if best > 1:
        for hit in ranked:
            hit.score /= best
    return sorted(ranked, key=lambda hit: -hit.score)
