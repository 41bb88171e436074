"""What an agent is doing when it asks for context (seed 003's task classification):
``conversation``, ``problem_solving``, ``learning`` or ``analysis``.

Deterministic by default: a vote of the nearest labelled examples (``memory/context/data/
task_types.json``, ``train``) by cosine similarity of the local model's embeddings, each
neighbour's vote weighted by its similarity. The labelled ``held_out`` examples are never voted
with; they measure the classifier (bench/memory/context_task_types.py, docs/benchmarks-log.md).
With an LLM configured, the model classifies (its answer validated against the four types); a failed
answer falls back to the vote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.embeddings import get_embedding_provider
from core.llm import LLMError, get_llm_provider
from core.process_cache import PerProcess
from memory.tuning import TUNING

CONVERSATION, PROBLEM_SOLVING, LEARNING, ANALYSIS = (
    "conversation",
    "problem_solving",
    "learning",
    "analysis",
)
TASK_TYPES = (CONVERSATION, PROBLEM_SOLVING, LEARNING, ANALYSIS)
EXAMPLES = Path(__file__).resolve().parent / "data" / "task_types.json"
# The labelled examples that vote on a query's type: ``TUNING.task_types.neighbours``.


def labelled(split: str = "train") -> list[tuple[str, str]]:
    """(text, task type) of the labelled examples of ``split`` (train or held_out)."""
    data = json.loads(EXAMPLES.read_text(encoding="utf-8"))[split]
    return [(text, task_type) for task_type in TASK_TYPES for text in data[task_type]]


@dataclass(frozen=True)
class _Examples:
    labels: list[str]
    vectors: np.ndarray  # one row per example, unit length
    model_id: str


def _examples() -> _Examples:
    provider = get_embedding_provider()
    pairs = labelled("train")
    matrix = np.asarray(provider.embed_documents([text for text, _ in pairs]), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return _Examples([label for _, label in pairs], matrix, provider.model_id)


_cached: PerProcess[_Examples] = PerProcess(_examples)


def vote(query: str, *, query_vector: np.ndarray | None = None) -> tuple[str, dict[str, float]]:
    """The offline classification: (task type, each type's share of the vote)."""
    examples = _cached.get()
    if examples.model_id != get_embedding_provider().model_id:
        _cached.reset()
        examples = _cached.get()
    vector = np.asarray(
        query_vector if query_vector is not None else get_embedding_provider().embed_query(query),
        dtype=np.float32,
    )
    vector = vector / (np.linalg.norm(vector) or 1.0)
    similarity = examples.vectors @ vector
    nearest = np.argsort(-similarity)[: TUNING.task_types.neighbours]
    weights: dict[str, float] = dict.fromkeys(TASK_TYPES, 0.0)
    for index in nearest:
        weights[examples.labels[index]] += max(0.0, float(similarity[index]))
    total = sum(weights.values()) or 1.0
    shares = {name: round(weight / total, 4) for name, weight in weights.items()}
    best = max(TASK_TYPES, key=lambda name: (shares[name], -TASK_TYPES.index(name)))
    return best, shares


_LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task_type": {"type": "string", "enum": list(TASK_TYPES)}},
    "required": ["task_type"],
}
_LLM_SYSTEM = (
    "Classify what an AI agent is doing with this request: conversation (talking with a "
    "person, recalling what was said), problem_solving (fixing, building, planning steps), "
    "learning (understanding a topic) or analysis (comparing, evaluating, finding patterns)."
)


def classify(query: str, *, query_vector: np.ndarray | None = None) -> tuple[str, str]:
    """(task type, method): the LLM's (method its model id) when one is configured and answers
    one of the four types, else the vote (method ``offline``)."""
    provider = get_llm_provider()
    if not provider.model_id.startswith("offline:"):
        try:
            answer = provider.complete_json(
                query[:2000], schema=_LLM_SCHEMA, system=_LLM_SYSTEM, max_tokens=50
            )
            if answer.get("task_type") in TASK_TYPES:
                return str(answer["task_type"]), provider.model_id
        except LLMError:
            pass  # the vote below still answers
    return vote(query, query_vector=query_vector)[0], "offline"
