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

The cost is one forward pass over the candidates (``TUNING.late.depth``: about 300 ms on two cores
for 30 chat turns; the states of texts scored lately are kept, ``StateCache``; the query's come
from the pass that embedded it when the local model did), so a space takes
it only in the modes that pay for depth anyway: the long-term entries' graph mode
(``SpaceWeights.late_weight``, ``rag.spaces.space_weights``). It always runs on the local
model, whichever embedding provider is configured: its token states are what it reads.
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
from rag.tuning import TUNING

# How many of the best candidates are re-scored, whether only content tokens match and the
# rarity floor are ``TUNING.late`` (rag.tuning).
# Query tokens that name nothing: a question's function words and the index's stop words.
_QUIET = FUNCTION_WORDS | STOP_WORDS

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
    """The tokens and token states of the texts scored last, kept (quantised, as a stored
    reading keeps them) until ``max_tokens`` is passed, the least recently used dropped first.
    The same turns come back query after query in one conversation, and their states cost the
    model's pass; a text's states depend on its words only, so the text is the key. Shared by a
    process's threads."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.tokens = 0
        self._states: OrderedDict[str, tuple[tuple[str, ...], np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._states)

    def get(self, text: str) -> Read | None:
        with self._lock:
            kept = self._states.get(text)
            if kept is None:
                return None
            self._states.move_to_end(text)
        tokens, values, scales = kept
        return tokens, dequantise(values, scales)

    def put(self, text: str, tokens: Sequence[str], states: np.ndarray) -> None:
        if len(states) > self.max_tokens or not len(states):
            return
        values, scales = quantise(states)
        with self._lock:
            if text in self._states:
                return
            self._states[text] = (tuple(tokens), values, scales)
            self.tokens += len(states)
            while self.tokens > self.max_tokens:
                _, (dropped, _, _) = self._states.popitem(last=False)
                self.tokens -= len(dropped)


# About 13 MB a process (384 int8 values and a scale a token).
CACHE_TOKENS = 32_768
_cache = StateCache(CACHE_TOKENS)


def quantise(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit-length token states as int8 rows and one float32 scale a row (the row's largest
    magnitude): ``dequantise`` gives each value back within half a step (1/254 of it)."""
    scales = np.maximum(np.abs(states).max(axis=1), 1e-12).astype(np.float32)
    values = np.rint(states / scales[:, None] * 127).astype(np.int8)
    return values, scales


def dequantise(values: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The states ``quantise`` stored, as float32."""
    restored: np.ndarray = values.astype(np.float32) * (scales[:, None] / 127)
    return restored


def stored_read(tokens: Sequence[str], values: bytes, scales: bytes) -> Read:
    """A reading as ``quantise`` stored it (int8 rows and float32 scales, as bytes) given back.
    A text with no token (only characters the tokenizer drops, such as a zero-width space)
    has an empty reading, which scores 0 against every query."""
    if not tokens:
        return (), np.empty((0, 0), dtype=np.float32)
    rows = np.frombuffer(values, dtype=np.int8).reshape(len(tokens), -1)
    return tuple(tokens), dequantise(rows, np.frombuffer(scales, dtype=np.float32))


def rounded(states: np.ndarray) -> np.ndarray:
    """``states`` as a stored reading gives them back: every path (stored, cached, computed)
    scores a text the same."""
    return dequantise(*quantise(states)) if len(states) else states.astype(np.float32)


def read_texts(texts: Sequence[str]) -> list[Read]:
    """Each text's tokens and rounded states, from one model pass (for storing: ``quantise``)."""
    return [(tuple(tokens), rounded(states)) for tokens, states in late_model().token_states(texts)]


def _states(
    query: str, texts: Sequence[str], reads: Mapping[str, Read]
) -> tuple[list[str], np.ndarray, list[Read]]:
    """The query's tokens and states, and each text's: from ``reads`` (stored readings) or the
    cache where they have them, the rest with the query in one model call."""
    found: dict[str, Read] = {}
    for text in texts:
        known = reads.get(text) or _cache.get(text)
        if known is not None:
            found[text] = known
    missing = list(dict.fromkeys(text for text in texts if text not in found))
    model = late_model()
    # The query's states from the pass that embedded it, when this model did (the local
    # provider keeps its latest queries'); else read with the missing texts in one call.
    query_read = model.query_token_states(query)
    if query_read is None:
        query_read, *computed = model.token_states([query, *missing])
    else:
        computed = model.token_states(missing)
    query_tokens, query_states = query_read
    for text, (tokens, states) in zip(missing, computed, strict=True):
        read = (tuple(tokens), rounded(states))
        _cache.put(text, *read)
        found[text] = read
    return query_tokens, query_states, [found[text] for text in texts]


def rarity_weights(query_tokens: Sequence[str], candidates: Sequence[Sequence[str]]) -> np.ndarray:
    """Each query token's weight in the mean: its inverse document frequency among the
    candidates (BM25's, ``log((n + 1) / (df + 0.5))``, at least ``TUNING.late.rarity_floor``), the
    weights summing to 1. A word every candidate has (the speaker a question names, whose turns the
    speaker lift has put first) tells the candidates apart by nothing; a word few of them have
    is what the question turns on."""
    sets = [set(tokens) for tokens in candidates]
    n = len(sets)
    weights = np.asarray(
        [
            max(
                TUNING.late.rarity_floor, float(np.log((n + 1) / (sum(t in c for c in sets) + 0.5)))
            )
            for t in query_tokens
        ],
        dtype=np.float32,
    )
    return weights / weights.sum()


def late_scores(
    query: str, texts: Sequence[str], reads: Mapping[str, Read] | None = None
) -> list[float]:
    """Each text's MaxSim score for ``query``: the mean over the query's content tokens (every
    token when none is content) of their best cosine with a token of the text, weighted by
    the tokens' rarity among ``texts`` (``rarity_weights``), -1 to 1. A text's score depends
    on the texts scored with it. Their states come from ``reads`` (a text's stored reading) or
    ``StateCache`` when they have them."""
    if not texts:
        return []
    query_tokens, query_states, candidates = _states(query, texts, reads or {})
    keep = [
        i for i, token in enumerate(query_tokens) if _content(token) or not TUNING.late.content_only
    ]
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
    depth: int | None = None,
    reads: Mapping[str, Read] | None = None,
) -> list[RankedHit]:
    """The first ``depth`` hits (those with a text) gain ``weight`` times their late score above
    the lowest of them; the scores are then divided by the best when it passes 1, as the
    speaker lift does, and the list re-sorted. Each re-scored hit keeps its ``late_score``."""
    depth = TUNING.late.depth if depth is None else depth
    head = [hit for hit in ranked[:depth] if hit.unit_id in texts]
    if weight <= 0 or len(head) < 2:
        return ranked
    scores = np.asarray(late_scores(query, [texts[hit.unit_id] for hit in head], reads))
    low = float(scores.min())
    for hit, score in zip(head, scores, strict=True):
        hit.late_score = float(score)
        hit.score += weight * (float(score) - low)
    best = max(hit.score for hit in ranked)
    if best > 1:
        for hit in ranked:
            hit.score /= best
    return sorted(ranked, key=lambda hit: -hit.score)
