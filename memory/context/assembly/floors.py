"""Relevance floors of the sources a context reads besides the conversation: an item is a
candidate only when it is on topic, so neither a section's share nor the budget left over at
the end (the final fill) ever goes to an off-topic item (docs/memory/context.md).
Memories and knowledge items keep theirs in ``sources`` (``MEMORY_MIN_SIMILARITY``,
``KNOWLEDGE_MIN_SIMILARITY``); the others are here, each on the signal the engine computes for
that store, chosen on data by ``bench/memory/context_floors.py`` (docs/benchmarks-log.md, "Every
source on topic"). ``None`` turns a floor off (the benchmark's baseline).

- Document chunks: the calibrated evidence (``rag.evidence.chunk_hits_evidence``: a logistic
  model of the chunk's cosine similarity to the query and the idf-weighted share of the
  query's terms it holds, fitted on SciFact train judgements), a probability-like number that
  compares across queries, where the fused score does not (its best is near 1 for any query).
- Pages and skills: the cosine similarity of the query to the page's graph node (title,
  aliases, the start of its text) or to the skill (name, description, the start of its
  procedure), read exactly for every hit (``rag.vector.unit_similarities``).
- Pool values and working memory: the cosine similarity of the query to the value as the
  context shows it (its pool, key or path, value), embedded when found: neither store keeps
  embeddings. Two signals that need no model were measured and lost: the router's relevance
  (the share of the query's BM25 weight among the terms the stores hold) let off-topic values
  through, a question sharing one rare word with a pool scoring high; the idf-weighted share of
  the query's terms a value holds dropped on-topic values worded otherwise than the question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from core.embeddings import get_embedding_provider
from memory.context.selectors.router import WORKING
from rag.evidence import CONTEXT_MIN_EVIDENCE, chunk_hits_evidence
from rag.search import SearchHit
from rag.vector import unit_similarities

if TYPE_CHECKING:
    from content.selectors import PageHit
    from memory.context.selectors.search import MemoryHit
    from skills.selectors.catalog import SkillHit

# Graph RAG's context keeps chunks on the same floor (``rag.evidence``).
_NAME_PARTS = re.compile(r"[._\-]+")

DOCUMENT_MIN_EVIDENCE: float | None = CONTEXT_MIN_EVIDENCE
PAGE_MIN_SIMILARITY: float | None = 0.3
SKILL_MIN_SIMILARITY: float | None = 0.3
POOL_MIN_SIMILARITY: float | None = 0.3
WORKING_MIN_SIMILARITY: float | None = 0.3
# The characters of a value embedded to measure its similarity (the model reads 256 tokens).
TASK_TEXT_CHARS = 1000


def documents_on_topic(
    query: str, hits: Sequence[SearchHit], knowledge_base_ids: Sequence[int]
) -> list[tuple[SearchHit, float]]:
    """The chunk hits whose evidence reaches ``DOCUMENT_MIN_EVIDENCE``, each with it, in the
    engine's order."""
    scored = list(zip(hits, chunk_hits_evidence(query, hits, knowledge_base_ids), strict=True))
    floor = DOCUMENT_MIN_EVIDENCE
    return [(hit, value) for hit, value in scored if floor is None or value >= floor]


def _similarities(
    found: dict[int, float | None], space: object, vector: np.ndarray
) -> dict[int, float]:
    """Each unit's cosine similarity to the query: the vector stage's where it ranked the unit,
    read for the others (found by their words alone)."""
    missing = [unit for unit, value in found.items() if value is None]
    read = unit_similarities(space=space, unit_ids=missing, query_vector=vector) if missing else {}  # type: ignore[arg-type]
    return {
        unit: (value if value is not None else read.get(unit, 0.0)) for unit, value in found.items()
    }


def pages_on_topic(hits: Sequence[PageHit], vector: np.ndarray) -> list[tuple[PageHit, float]]:
    """The page hits whose node's cosine similarity reaches ``PAGE_MIN_SIMILARITY``, each with
    it, in the search's order."""
    from rag.spaces import GRAPH_NODES

    found = {
        hit.page.node_id: hit.retrieval.get("vector_score") for hit in hits if hit.page.node_id
    }
    similarity = _similarities(found, GRAPH_NODES, vector)
    floor = PAGE_MIN_SIMILARITY
    scored = [(hit, similarity.get(hit.page.node_id or 0, 0.0)) for hit in hits]
    return [(hit, value) for hit, value in scored if floor is None or value >= floor]


def skills_on_topic(hits: Sequence[SkillHit], vector: np.ndarray) -> list[tuple[SkillHit, float]]:
    """The skill hits whose cosine similarity reaches ``SKILL_MIN_SIMILARITY``, each with it."""
    from skills.spaces import SKILLS

    found = {hit.skill.pk: hit.retrieval.get("vector_score") for hit in hits}
    similarity = _similarities(found, SKILLS, vector)
    floor = SKILL_MIN_SIMILARITY
    scored = [(hit, similarity.get(hit.skill.pk, 0.0)) for hit in hits]
    return [(hit, value) for hit, value in scored if floor is None or value >= floor]


def task_text(hit: MemoryHit) -> str:
    """What a working-memory or pool hit says, as its similarity is measured: its pool, its key
    or path (words apart) and its value."""
    value = hit.content if isinstance(hit.content, str) else json.dumps(hit.content)
    name = _NAME_PARTS.sub(" ", f"{hit.pool_id} {hit.key}" if hit.tier != WORKING else hit.key)
    return f"{name}: {value[:TASK_TEXT_CHARS]}"


def tasks_on_topic(hits: Sequence[MemoryHit], vector: np.ndarray) -> list[MemoryHit]:
    """The working-memory and pool hits whose text's cosine similarity to the query reaches
    their floor (``WORKING_MIN_SIMILARITY``, ``POOL_MIN_SIMILARITY``): neither store keeps
    embeddings, so the few hits (at most the context's ``TASK_CANDIDATES``) are embedded here,
    in one batch."""
    if not hits or (WORKING_MIN_SIMILARITY is None and POOL_MIN_SIMILARITY is None):
        return list(hits)
    similarity = task_similarities(hits, vector)
    kept = []
    for hit, value in zip(hits, similarity, strict=True):
        floor = WORKING_MIN_SIMILARITY if hit.tier == WORKING else POOL_MIN_SIMILARITY
        if floor is None or value >= floor:
            kept.append(hit)
    return kept


def task_similarities(hits: Sequence[MemoryHit], vector: np.ndarray) -> list[float]:
    """Each hit's text's cosine similarity to the query's embedding ``vector``."""
    embedded = np.asarray(
        get_embedding_provider().embed_documents([task_text(hit) for hit in hits]),
        dtype=np.float32,
    )
    norms = np.linalg.norm(embedded, axis=1) * (float(np.linalg.norm(vector)) or 1.0)
    return [float(v) for v in embedded @ vector / np.where(norms == 0, 1.0, norms)]
