"""Summaries of a stretch of conversation: text plus key points.

With an LLM configured, the model writes them (JSON, validated). Offline, a deterministic
extractive summary, honest about what it is: the conversation's sentences are embedded with the
local model and chosen by maximal marginal relevance (Carbonell & Goldstein, 1998) against the
stretch's centroid, so the summary covers the stretch's main threads rather than its opening
lines; the chosen sentences are given in conversation order, each after its speaker. Key points
are keyphrases ranked by RAKE (Rose et al., 2010): runs of content words between stop words and
punctuation, scored by their words' degree over frequency. Nothing is paraphrased offline: every
sentence is one a speaker said.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.embeddings import get_embedding_provider
from core.llm import LLMError, get_llm_provider
from memory.tuning import TUNING

# The summary's sentences, key points and the model's input are tunables (``memory.tuning``:
# ``TUNING.summaries``, ``TUNING.llm``).

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+")
# Function words for RAKE's phrase boundaries (English).
_STOP_TEXT = """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i i'm i've if
    in into is it it's its itself just know let like me more most my myself no nor not now of off
    oh ok okay on once only or other our ours ourselves out over own really same she should so
    some such than that that's the their theirs them themselves then there these they this those
    through to too under until up very was we we're were what when where which while who whom
    why will with would yeah yes you you're your yours yourself yourselves thanks thank hey hi
    wow great good sure got get go going one lot much many well think thought i'll i'd
you'll it'll we'll they'll don't didn't can't won't isn't wasn't let's"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True)
class Line:
    """One message of the stretch: who said it and what."""

    speaker: str
    text: str


@dataclass(frozen=True)
class Summary:
    text: str
    key_points: list[str]
    method: str  # "offline" or "llm:<model>"


def _sentences(lines: Sequence[Line]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    longest = TUNING.summaries.max_sentence_chars
    for index, line in enumerate(lines):
        for sentence in _SENTENCE.split(line.text.strip()):
            sentence = " ".join(sentence.split())
            while len(sentence) > longest:
                cut = sentence.rfind(", ", 0, longest)
                cut = cut if cut > 40 else sentence.rfind(" ", 0, longest)
                if cut <= 0:
                    break
                found.append((index, sentence[:cut].rstrip(",") + "..."))
                sentence = sentence[cut + 1 :].strip()
            if len(_WORD.findall(sentence)) >= 3:
                found.append((index, sentence))
    return found


def mmr_select(vectors: np.ndarray, k: int, lam: float | None = None) -> list[int]:
    """Indexes of ``k`` rows chosen by maximal marginal relevance to the rows' centroid
    (``lam``: relevance's share, ``TUNING.summaries.mmr_lambda`` when not given)."""
    if len(vectors) == 0 or k <= 0:
        return []
    if lam is None:
        lam = TUNING.summaries.mmr_lambda
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    centroid = unit.mean(axis=0)
    centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
    relevance = unit @ centroid
    chosen: list[int] = []
    redundancy = np.full(len(unit), -1.0)
    for _ in range(min(k, len(unit))):
        score = lam * relevance - (1 - lam) * np.maximum(redundancy, 0.0)
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        chosen.append(best)
        redundancy = np.maximum(redundancy, unit @ unit[best])
    return chosen


def key_phrases(texts: Sequence[str], limit: int | None = None) -> list[str]:
    """RAKE keyphrases of the texts, best first (case kept from their first use), at most
    ``limit`` (``TUNING.summaries.max_key_points`` when not given)."""
    if limit is None:
        limit = TUNING.summaries.max_key_points
    phrases: list[list[str]] = []
    for text in texts:
        for fragment in re.split(r"[.,;:!?()\[\]\"\n]+", text):
            run: list[str] = []
            for word in _WORD.findall(fragment):
                if word.lower() in STOP_WORDS or (word.isdigit() and len(word) < 4):
                    if run:
                        phrases.append(run)
                    run = []
                else:
                    run.append(word)
            if run:
                phrases.append(run)
    phrases = [p for p in phrases if len(p) <= TUNING.summaries.max_phrase_words]
    frequency: dict[str, int] = defaultdict(int)
    degree: dict[str, int] = defaultdict(int)
    for phrase in phrases:
        for word in phrase:
            frequency[word.lower()] += 1
            degree[word.lower()] += len(phrase)
    scored: dict[str, tuple[float, str]] = {}
    counts: dict[str, int] = defaultdict(int)
    for phrase in phrases:
        key = " ".join(word.lower() for word in phrase)
        counts[key] += 1
        score = sum(degree[w.lower()] / frequency[w.lower()] for w in phrase)
        if key not in scored:
            scored[key] = (score, " ".join(phrase))
    # A phrase said several times matters more than a long one said once.
    ranked = sorted(
        scored.items(),
        key=lambda item: (-(item[1][0] * math.log2(1 + counts[item[0]])), item[0]),
    )
    chosen: list[str] = []
    for key, (_, shown) in ranked:
        if any(key in other.lower() or other.lower() in key for other in chosen):
            continue
        if len(key) < 3:
            continue
        chosen.append(shown)
        if len(chosen) == limit:
            break
    return chosen


def offline_summary(lines: Sequence[Line]) -> Summary:
    sentences = _sentences(lines)
    if not sentences:
        return Summary("", [], "offline")
    k = min(TUNING.summaries.max_sentences, max(2, math.ceil(len(sentences) / 4)))
    if k >= len(sentences):
        chosen = list(range(len(sentences)))
    else:
        vectors = np.asarray(
            get_embedding_provider().embed_documents([s for _, s in sentences]), dtype=np.float32
        )
        chosen = sorted(mmr_select(vectors, k))
    parts = []
    for i in chosen:
        index, sentence = sentences[i]
        speaker = lines[index].speaker
        parts.append(f"{speaker}: {sentence}" if speaker else sentence)
    return Summary(" ".join(parts), key_phrases([line.text for line in lines]), "offline")


_LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 1, "maxLength": 4000},
        "key_points": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 300},
            "maxItems": 12,
        },
    },
    "required": ["summary", "key_points"],
}
_LLM_SYSTEM = (
    "Summarise this stretch of a conversation in a few sentences: who said what that matters "
    "later (facts about the people, plans, decisions, dates). Then list its key points. Use "
    "only what the conversation says."
)


def summarise(lines: Sequence[Line]) -> Summary:
    """The LLM's summary when one is configured and answers valid JSON, else the offline one."""
    provider = get_llm_provider()
    if not provider.model_id.startswith("offline:") and lines:
        transcript = "\n".join(f"{line.speaker or 'unknown'}: {line.text}" for line in lines)[
            -TUNING.llm.input_chars :
        ]
        try:
            answer = provider.complete_json(
                transcript, schema=_LLM_SCHEMA, system=_LLM_SYSTEM, max_tokens=800
            )
            text = answer.get("summary")
            points = answer.get("key_points")
            if (
                isinstance(text, str)
                and text.strip()
                and isinstance(points, list)
                and all(isinstance(p, str) for p in points)
            ):
                return Summary(
                    text.strip()[:4000],
                    [p.strip()[:300] for p in points if p.strip()][:12],
                    f"llm:{provider.model_id}",
                )
        except LLMError:
            pass  # the offline summary still answers
    return offline_summary(lines)
