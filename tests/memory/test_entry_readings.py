"""Entries' readings (``MemoryEntryReading``): each long-term entry is read token by token when
it is indexed, and a graph search scores its candidates from those readings instead of running
the model over them, with the same scores."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memory import tasks
from memory.long_term.indexing import entry_text, text_sha
from memory.models import MemoryEntry, MemoryEntryReading
from rag import late_interaction
from rag.late_interaction import StateCache
from tests.conftest import AuthedAgent
from tests.memory.test_long_term_api import BASE, add_entry, create_context, search

TURNS = (
    "Melanie went camping in the mountains with her kids.",
    "Melanie signed up for a pottery class last week.",
    "Melanie painted a sunset over the lake.",
    "Caroline researched adoption agencies for weeks.",
    "The train to Lisbon was late again.",
)
QUESTION = "What activities does Melanie do with her family?"


@pytest.fixture
def model_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The texts each call of the local model's ``token_states`` reads, with an empty cache."""
    monkeypatch.setattr(late_interaction, "_cache", StateCache(10_000))
    model = late_interaction.late_model()
    real = model.token_states
    calls: list[list[str]] = []

    def counted(texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        calls.append(list(texts))
        return real(texts)

    monkeypatch.setattr(model, "token_states", counted)
    return calls


def _read(calls: list[list[str]]) -> set[str]:
    """The candidates' texts the model read (the query aside: the search may have read it with
    them, or when it embedded the query with the same model)."""
    return {text for call in calls for text in call if text != QUESTION}


def _late_scores(authed: AuthedAgent) -> dict[str, float]:
    body = search(authed, QUESTION, mode="graph", top_k=10).json()
    return {hit["content"]: hit["retrieval"]["late_score"] for hit in body["results"]}


def test_written_entries_are_read_and_graph_search_scores_from_the_readings(
    agent_client: AuthedAgent, settings: Any, model_calls: list[list[str]]
) -> None:
    settings.MEMORY_ENTRY_READINGS = True
    cid = create_context(agent_client)["id"]
    ids = [add_entry(agent_client, cid, text)["id"] for text in TURNS]
    readings = {r.entry_id: r for r in MemoryEntryReading.objects.filter(entry_id__in=ids)}
    assert set(readings) == set(ids)
    for entry_id, text in zip(ids, TURNS, strict=True):
        reading = readings[entry_id]
        tokens, states = late_interaction.late_model().token_states([text])[0]
        assert bytes(reading.text_sha) == text_sha(text)
        assert reading.tokens == tokens
        stored = late_interaction.dequantise(
            np.frombuffer(reading.states, dtype=np.int8).reshape(len(tokens), -1),
            np.frombuffer(reading.scales, dtype=np.float32),
        )
        assert np.abs(stored - states).max() <= 1 / 254 + 1e-6  # within half an int8 step

    model_calls.clear()
    from_readings = _late_scores(agent_client)
    # The candidates came from their readings: the model read at most the query.
    assert _read(model_calls) == set()
    assert len(from_readings) == len(TURNS) and all(s is not None for s in from_readings.values())

    # Without readings the search reads every candidate itself, and scores them the same.
    settings.MEMORY_ENTRY_READINGS = False
    MemoryEntryReading.objects.filter(entry_id__in=ids).delete()
    late_interaction._cache = StateCache(10_000)
    model_calls.clear()
    assert _late_scores(agent_client) == from_readings
    assert _read(model_calls) == set(TURNS)


def test_an_entry_the_tokenizer_reads_no_token_of_is_found_with_an_empty_reading(
    agent_client: AuthedAgent, settings: Any
) -> None:
    """Characters the tokenizer drops (a zero-width space, a soft hyphen) leave an entry with
    an empty reading: a graph search scores it 0 and answers, as it does for the others
    (this was a 500 the fuzzer found)."""
    settings.MEMORY_ENTRY_READINGS = True
    cid = create_context(agent_client)["id"]
    blank = add_entry(agent_client, cid, "\u200b\u00ad")["id"]
    ids = [blank, *(add_entry(agent_client, cid, text)["id"] for text in TURNS[:2])]
    assert MemoryEntryReading.objects.get(entry_id=blank).tokens == []
    body = search(agent_client, "f", mode="graph", top_k=10)
    assert body.status_code == 200, body.json()
    late = {hit["id"]: hit["retrieval"]["late_score"] for hit in body.json()["results"]}
    assert set(late) <= set(ids) and late.get(blank) in (None, 0.0)
    assert late_interaction.stored_read([], b"", b"")[1].shape == (0, 0)


def test_a_new_version_is_read_and_a_reading_of_another_text_is_not_used(
    agent_client: AuthedAgent, settings: Any, model_calls: list[list[str]]
) -> None:
    settings.MEMORY_ENTRY_READINGS = True
    cid = create_context(agent_client)["id"]
    first, *_ = [add_entry(agent_client, cid, text)["id"] for text in TURNS]
    edited = "Melanie went hiking in the mountains with her kids and her dog."
    response = agent_client.client.patch(
        f"{BASE}/entries/{first}", {"content": edited}, format="json"
    )
    assert response.status_code == 200, response.json()
    successor = MemoryEntry.objects.get(lineage=MemoryEntry.objects.get(pk=first).lineage,
                                        is_current=True)  # fmt: skip
    assert bytes(MemoryEntryReading.objects.get(entry=successor).text_sha) == text_sha(edited)

    # A row changed outside the services keeps a reading of its old text: the search does not
    # score the new text by it, but reads that text itself.
    changed = "Melanie rode a bike along the river with her kids."
    MemoryEntry.objects.filter(pk=successor.pk).update(content=changed)
    model_calls.clear()
    scores = _late_scores(agent_client)
    assert _read(model_calls) == {changed}
    late_interaction._cache = StateCache(10_000)
    MemoryEntryReading.objects.all().delete()
    assert _late_scores(agent_client)[changed] == scores[changed]


def test_readings_go_with_their_entry_and_the_periodic_job_reads_what_has_none(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.MEMORY_ENTRY_READINGS = False  # written while readings are off
    cid = create_context(agent_client)["id"]
    ids = [add_entry(agent_client, cid, text)["id"] for text in TURNS]
    assert not MemoryEntryReading.objects.filter(entry_id__in=ids).exists()
    assert tasks.fill_readings.delay().get() == {"read": 0, "left": 0}  # off: nothing to do

    settings.MEMORY_ENTRY_READINGS = True
    counts: dict[str, Any] = tasks.fill_readings.delay(dry_run=True).get()
    assert counts["left"] >= len(TURNS) and counts["dry_run"] == 1
    assert not MemoryEntryReading.objects.filter(entry_id__in=ids).exists()
    assert tasks.fill_readings.delay().get()["left"] == 0
    assert set(
        MemoryEntryReading.objects.filter(entry_id__in=ids).values_list("entry_id", flat=True)
    ) == set(ids)

    assert agent_client.client.delete(f"{BASE}/entries/{ids[0]}").status_code == 204
    assert not MemoryEntryReading.objects.filter(entry_id=ids[0]).exists()
    assert MemoryEntryReading.objects.filter(entry_id__in=ids[1:]).count() == len(ids) - 1


def test_conversation_messages_are_read_when_the_worker_indexes_them(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.MEMORY_ENTRY_READINGS = True
    base = "/api/v1/memory/conversations"
    chat_id = agent_client.client.post(base, {"title": "t", "summary_every": 0}, format="json")
    texts = [f"Line {n} about marmalade." for n in range(3)]
    answer = agent_client.client.post(
        f"{base}/{chat_id.json()['id']}/messages",
        {"messages": [{"role": "user", "content": text} for text in texts]},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    ids = [message["id"] for message in answer.json()["results"]]
    readings = MemoryEntryReading.objects.filter(entry_id__in=ids)
    assert readings.count() == len(ids)  # Celery is eager here: indexed, and read, on commit
    entries = MemoryEntry.objects.in_bulk(ids)
    for reading in readings:
        entry = entries[reading.entry_id]
        text = entry_text(entry.content, entry.data, entry.speaker)
        assert entry.content in text and bytes(reading.text_sha) == text_sha(text)
