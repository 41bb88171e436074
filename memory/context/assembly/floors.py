"""Relevance floors of the sources a context reads besides the conversation: an item is a
candidate only when it is on topic, so neither a section's share nor the budget left over at
the end (the final fill) ever goes to an off-topic item (docs/memory/context.md).
Every floor is a tunable (``memory.tuning``, ``TUNING.floors``; the documents' is graph RAG's,
``rag.evidence.context_min``); memories and knowledge items are held to theirs by their searches
in ``sources``, the others here, each on the signal the engine computes for that store, chosen
on data by ``bench/memory/context_floors.py`` (docs/benchmarks-log.md, "Every source on
topic"). ``None`` turns a floor off (the benchmark's baseline).

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
from memory.tuning import TUNING
from rag.evidence import chunk_hits_evidence
from rag.search import SearchHit
from rag.tuning import TUNING as RAG_TUNING
from rag.vector import unit_similarities

if TYPE_CHECKING:
    from content.selectors import PageHit
    from memory.context.selectors.search import MemoryHit
    from skills.selectors.catalog import SkillHit

_NAME_PARTS = re.compile(r"[._\-]+")

# The characters of a value embedded to measure its similarity (the model reads 256 tokens).
TASK_TEXT_CHARS = 1000


def documents_on_topic(
    query: str, hits: Sequence[SearchHit], knowledge_base_ids: Sequence[int]
) -> list[tuple[SearchHit, float]]:
    """The chunk hits whose evidence reaches the floor graph RAG's context keeps too
    (``rag.evidence.context_min``), each with it, in the engine's order."""
    scored = list(zip(hits, chunk_hits_evidence(query, hits, knowledge_base_ids), strict=True))
    floor = RAG_TUNING.evidence.context_min
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
    """The page hits whose node's cosine similarity reaches ``page_min_similarity``, each with
    it, in the search's order."""
    from rag.spaces import GRAPH_NODES

    found = {
        hit.page.node_id: hit.retrieval.get("vector_score") for hit in hits if hit.page.node_id
    }
    similarity = _similarities(found, GRAPH_NODES, vector)
    floor = TUNING.floors.page_min_similarity
    scored = [(hit, similarity.get(hit.page.node_id or 0, 0.0)) for hit in hits]
    return [(hit, value) for hit, value in scored if floor is None or value >= floor]


def skills_on_topic(hits: Sequence[SkillHit], vector: np.ndarray) -> list[tuple[SkillHit, float]]:
    """The skill hits whose cosine similarity reaches ``skill_min_similarity``, each with it."""
    from skills.spaces import SKILLS

    found = {hit.skill.pk: hit.retrieval.get("vector_score") for hit in hits}
    similarity = _similarities(found, SKILLS, vector)
    floor = TUNING.floors.skill_min_similarity
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
    their floor (``working_min_similarity``, ``pool_min_similarity``): neither store keeps
    embeddings, so the few hits (at most the context's ``task_candidates``) are embedded here,
    in one batch."""
    floors = TUNING.floors
    if not hits or (floors.working_min_similarity is None and floors.pool_min_similarity is None):
        return list(hits)
    similarity = task_similarities(hits, vector)
    kept = []
    for hit, value in zip(hits, similarity, strict=True):
        floor = floors.working_min_similarity if hit.tier == WORKING else floors.pool_min_similarity
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
