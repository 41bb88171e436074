"""Effective relevance scored only where it can matter, and hits loaded with only the fields a
caller reads: the same answers as scoring every candidate and loading through the ORM."""

from __future__ import annotations

import random

import pytest

from core.actors import actor_for_agent
from memory.context.assembly.sources import MEMORY_FIELDS, TURN_FIELDS
from memory.long_term import services as ltm
from memory.long_term.entry_loading import entries_by_id
from memory.long_term.relevance import best_rows, effective_relevance_score, relevance_components
from memory.models import MemoryEntry
from rag.search import RankedHit
from tests.conftest import AuthedAgent


def _exact(
    ranked: list[RankedHit],
    similarity: dict[int, float],
    scoring: dict[int, tuple[float, float, float]],
    top_k: int,
) -> list[tuple[float, int]]:
    scored = []
    for hit in ranked:
        importance, confidence, idle = scoring[hit.unit_id]
        components = relevance_components(
            similarity=similarity[hit.unit_id],
            importance=importance,
            confidence=confidence,
            idle_days=idle,
        )
        scored.append((effective_relevance_score(components), hit.unit_id))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return scored[:top_k]


@pytest.mark.parametrize("seed", range(20))
def test_the_best_rows_hold_every_hit_exact_scoring_keeps(seed: int) -> None:
    """Many ties and near-ties (scores on a coarse grid, as fused scores often are), yet the
    page chosen among the kept rows is the page chosen among all of them."""
    rng = random.Random(seed)
    count, top_k = rng.randint(1, 400), rng.randint(1, 120)
    ranked = [RankedHit(unit_id=n, score=0.0) for n in range(count)]
    similarity = {n: rng.choice([0.5, 0.25, 1 / 3, rng.random()]) for n in range(count)}
    scoring = {
        n: (
            rng.choice([0.5, 0.7]),
            rng.choice([0.8, 1.0]),
            rng.choice([0.0, 3.0, rng.random() * 90]),
        )
        for n in range(count)
    }
    del scoring[rng.randrange(count)]  # a candidate deleted meanwhile has no row
    present = [hit for hit in ranked if hit.unit_id in scoring]

    kept = best_rows(ranked, similarity, scoring, top_k)

    assert {hit.unit_id for hit, _ in kept} <= set(scoring)
    assert len(kept) >= min(top_k, len(present))
    assert _exact([hit for hit, _ in kept], similarity, scoring, top_k) == _exact(
        present, similarity, scoring, top_k
    )


@pytest.mark.django_db
@pytest.mark.parametrize("fields", [TURN_FIELDS, MEMORY_FIELDS, ()])
def test_entries_load_as_the_orm_loads_them(
    agent_client: AuthedAgent, fields: tuple[str, ...]
) -> None:
    actor = actor_for_agent(agent_client.agent)
    context = ltm.agent_memory_context(actor=actor)
    written = ltm.entries_write(
        actor=actor,
        context=context,
        items=[
            ltm.EntryInput("Ana sails at dawn.", metadata={"dia_id": "D1:1", "n": [1, 2]}),
            ltm.EntryInput("", data={"port": "Porto"}, metadata={}),
        ],
    )
    ids = [entry.pk for entry in written] + [10**12]  # and one that does not exist

    loaded = entries_by_id(ids, fields)

    assert sorted(loaded) == sorted(entry.pk for entry in written)
    orm = MemoryEntry.objects.in_bulk(ids)
    for pk, entry in loaded.items():
        for name in fields or ("content", "data", "metadata", "occurred_at", "context_id"):
            assert getattr(entry, name) == getattr(orm[pk], name), name
        if fields:
            assert entry.get_deferred_fields() >= {"embedding", "importance"}
        # No vector of either generation is read (core.embeddings.generations).
        assert {"embedding", "embedding_next"} <= entry.get_deferred_fields()


@pytest.mark.django_db
def test_an_unknown_field_is_an_error_not_a_query_per_entry() -> None:
    from django.core.exceptions import FieldDoesNotExist

    with pytest.raises(FieldDoesNotExist):
        entries_by_id([1], ("content", "no_such_field"))
