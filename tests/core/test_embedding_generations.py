"""Embedding-model migration (core.embeddings.generations): a next generation is built beside
the current one while searches keep answering, writes made meanwhile are embedded for both, the
cut-over and the rollback are one action each, and widths change (384 to 1,536 and back).

The next model is an OpenAI-compatible stand-in server (tests/support/openai_standin.py) of
another width, embedding semantically (hashed words and trigrams), so that a search after the
cut-over finds by the new vectors what it found by the old ones."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from core.actors import actor_for_agent
from core.embeddings import generations, get_embedding_provider, reset_embedding_provider
from core.models import EmbeddingGeneration
from rag import services
from rag.models import Chunk, KnowledgeBase
from tests.conftest import AuthedAgent
from tests.support.openai_standin import OpenAIStandIn

pytestmark = pytest.mark.django_db(transaction=True)

TOPICS = {
    "tides": "Tide pilots read the harbour tables before every departure at dawn.",
    "bees": "Beekeepers smoke the hive gently before lifting the honey frames.",
    "glaciers": "Glaciologists drill ice cores to date the layers of ancient snow.",
    "violins": "Luthiers carve spruce tops and varnish violins in thin coats.",
    "ferments": "Brewers pitch yeast into cooled wort and wait for fermentation.",
}
QUERIES = ["harbour tide tables", "honey frames hive", "ice cores snow", "spruce violins"]


def _column_type(table: str, column: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attname = %s AND NOT attisdropped",
            [table, column],
        )
        row = cursor.fetchone()
    return str(row[0]) if row else ""


@pytest.fixture(autouse=True)
def _schema_restored(transactional_db: None) -> Iterator[None]:
    """Generations change the embedded tables' schema, which a flush does not undo: put back
    the first generation's (384 wide ``embedding`` with its ``_vec_g1`` index, an empty
    untyped ``embedding_next``) for the tests that follow on this database."""
    yield
    with connection.cursor() as cursor:
        for table in generations.embedded_tables():
            name = table.table
            if _column_type(name, "embedding") != "vector(384)":
                if _column_type(name, "embedding_next") == "vector(384)":
                    for statement in generations._swap_columns():
                        if statement.startswith(f"ALTER TABLE {name} "):
                            cursor.execute(statement)
                else:
                    cursor.execute(
                        f"ALTER TABLE {name} ALTER COLUMN embedding TYPE vector(384) USING NULL"
                    )
            for statement in generations._reset_other_columns(None):
                if statement.startswith(f"ALTER TABLE {name} "):
                    cursor.execute(statement)
            cursor.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexname LIKE %s",
                [name, f"{name}_vec_g%"],
            )
            for (index,) in cursor.fetchall():
                cursor.execute(f"DROP INDEX {index}")
            if table.indexed:
                cursor.execute(
                    generations.index_sql(table, f"{name}_vec_g1", "embedding", concurrently=False)
                )


def _configure_next(settings: Any, server: OpenAIStandIn, model: str, dimensions: int) -> None:
    settings.EMBEDDING_NEXT_PROVIDER = "openai"
    settings.EMBEDDING_NEXT_MODEL = model
    settings.EMBEDDING_NEXT_BASE_URL = server.base_url
    settings.EMBEDDING_NEXT_DIMENSIONS = dimensions
    reset_embedding_provider()


@pytest.fixture
def wide_model(settings: Any) -> Iterator[OpenAIStandIn]:
    """EMBEDDING_NEXT_*: a 1,536-wide model on a stand-in server."""
    with OpenAIStandIn(embedding_dimensions=1536, semantic=True) as server:
        _configure_next(settings, server, "wide-embedder", 1536)
        yield server
    reset_embedding_provider()


@pytest.fixture
def corpus(agent_client: AuthedAgent) -> list[int]:
    actor = actor_for_agent(agent_client.agent)
    kb = services.knowledge_base_create(actor=actor, name="Crafts", chunk_size=64)
    documents = [
        services.document_create(
            actor=actor, kb=kb, data=text.encode(), title=title, content_type="text/plain",
            enqueue=False,
        )
        for title, text in TOPICS.items()
    ]  # fmt: skip
    services.documents_process_batch(document_ids=[d.pk for d in documents])
    return [d.pk for d in documents]


class Searcher(threading.Thread):
    """Searches over HTTP, round after round, until stopped; records what failed or came back
    empty."""

    def __init__(self, agent: AuthedAgent) -> None:
        super().__init__(daemon=True)
        self.secret = agent.secret
        self.stop = threading.Event()
        self.rounds = 0
        self.failures: list[str] = []

    def run(self) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.secret}")
        try:
            while not self.stop.is_set():
                for query in QUERIES:
                    response = client.post(
                        "/api/v1/rag/search", {"query": query, "top_k": 3}, format="json"
                    )
                    if response.status_code != 200:
                        self.failures.append(
                            f"{query}: {response.status_code} {response.content!r}"
                        )
                    elif not response.json()["results"]:
                        self.failures.append(f"{query}: no result")
                self.rounds += 1
        finally:
            connections.close_all()


def _top_title(agent: AuthedAgent, query: str) -> tuple[str, float | None]:
    response = agent.client.post(
        "/api/v1/rag/search", {"query": query, "top_k": 1, "mode": "vector"}, format="json"
    )
    assert response.status_code == 200, response.content
    hit = response.json()["results"][0]
    return hit["document_title"], hit["explanation"]["vector"]["score"]


def test_a_migration_while_searching_then_rollback_and_drop(
    agent_client: AuthedAgent, corpus: list[int], wide_model: OpenAIStandIn
) -> None:
    narrow = get_embedding_provider().model_id
    before = {query: _top_title(agent_client, query)[0] for query in QUERIES}
    searcher = Searcher(agent_client)
    searcher.start()
    try:
        generation = generations.generation_start(auto_cutover=True, enqueue=False)
        assert generation.role == "next" and generation.dimensions == 1536
        assert _column_type("rag_chunk", "embedding_next") == "vector(1536)"
        # A write during the migration is embedded for both generations.
        actor = actor_for_agent(agent_client.agent)
        kb_id = Chunk.objects.filter(document_id=corpus[0]).values_list(
            "knowledge_base", flat=True
        )[0]
        late = services.document_create(
            actor=actor,
            kb=KnowledgeBase.objects.get(pk=kb_id),
            data=b"Cartographers ink coastlines on vellum charts by lamplight.",
            title="maps",
            content_type="text/plain",
            enqueue=False,
        )
        services.documents_process_batch(document_ids=[late.pk])
        written = Chunk.objects.filter(document=late)
        assert written.exists()
        assert set(written.values_list("embedding_model", flat=True)) == {narrow}
        assert set(written.values_list("embedding_next_model", flat=True)) == {
            "openai:wide-embedder"
        }
        # Searches still read the current generation while the next one is built.
        assert get_embedding_provider().model_id == narrow
        outcome = generations.generation_build(generation.pk)
        assert outcome == "cut over"
        rounds_at_cutover = searcher.rounds
        while searcher.rounds < rounds_at_cutover + 2 and searcher.is_alive():
            searcher.stop.wait(0.05)
    finally:
        searcher.stop.set()
        searcher.join(timeout=60)
    assert searcher.failures == []
    assert searcher.rounds >= 2

    generations.forget_state()
    assert get_embedding_provider().model_id == "openai:wide-embedder"
    assert _column_type("rag_chunk", "embedding") == "vector(1536)"
    assert _column_type("rag_chunk", "embedding_next") == "vector(384)"
    roles = dict(EmbeddingGeneration.objects.values_list("role", "model_id"))
    assert roles["current"] == "openai:wide-embedder" and roles["previous"] == narrow
    status = generations.generation_status()
    chunks = next(s for s in status["spaces"] if s["space"] == "chunks")
    assert chunks["stale"] == 0 and chunks["missing"] == 0 and chunks["units"] == 6
    # The new vectors find what the old ones found, through the new generation's HNSW index.
    for query in QUERIES:
        title, score = _top_title(agent_client, query)
        assert title == before[query] and score is not None
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'rag_chunk'")
        indexes = {row[0] for row in cursor.fetchall()}
    assert generations.current_index("rag_chunk") in indexes

    # A write after the cut-over keeps the previous generation whole, for a rollback.
    after = services.document_create(
        actor=actor,
        kb=KnowledgeBase.objects.get(pk=kb_id),
        data=b"Falconers hood the hawk before carrying it to the field.",
        title="falcons",
        content_type="text/plain",
        enqueue=False,
    )
    services.documents_process_batch(document_ids=[after.pk])
    assert set(
        Chunk.objects.filter(document=after).values_list("embedding_next_model", flat=True)
    ) == {narrow}

    # Rollback: one action, back to 384 wide vectors and the model that made them.
    generations.generation_rollback()
    generations.forget_state()
    assert get_embedding_provider().model_id == narrow
    assert _column_type("rag_chunk", "embedding") == "vector(384)"
    for query in QUERIES:
        assert _top_title(agent_client, query)[0] == before[query]
    assert _top_title(agent_client, "hawk falconers hood")[0] == "falcons"

    # Dropping the other generation ends the rollback's window; a start is possible again.
    dropped = generations.generation_drop()
    assert dropped.model_id == "openai:wide-embedder" and dropped.role == "dropped"
    assert _column_type("rag_chunk", "embedding_next") == "vector"
    with pytest.raises(generations.Conflict) as refused:
        generations.generation_rollback()
    assert refused.value.code == "no_previous_generation"


def test_from_1536_back_to_384_and_a_resumed_build(
    agent_client: AuthedAgent, corpus: list[int], settings: Any
) -> None:
    """The current model is itself 1,536 wide (a first migration's result, its settings moved);
    the next is 384 wide. A build stopped half-way resumes where it stopped."""
    with (
        OpenAIStandIn(embedding_dimensions=1536, semantic=True) as wide,
        OpenAIStandIn(embedding_dimensions=384, semantic=True) as narrow,
    ):
        _configure_next(settings, wide, "wide-embedder", 1536)
        first = generations.generation_start(auto_cutover=True, enqueue=False)
        assert generations.generation_build(first.pk) == "cut over"
        generations.generation_drop()
        # The operator moves the settings: the wide model is EMBEDDING_*; the next is narrow.
        settings.EMBEDDING_PROVIDER = "openai"
        settings.EMBEDDING_MODEL = "wide-embedder"
        settings.EMBEDDING_BASE_URL = wide.base_url
        settings.EMBEDDING_DIMENSIONS = 1536
        _configure_next(settings, narrow, "narrow-embedder", 384)
        assert get_embedding_provider().model_id == "openai:wide-embedder"

        second = generations.generation_start(auto_cutover=False, enqueue=False)
        assert _column_type("rag_chunk", "embedding_next") == "vector(384)"
        # The build stops after the first batch of chunks (a worker that died).
        original = generations.BATCH
        generations.BATCH = 2
        calls = 0
        real_record = generations._record

        def record_then_die(generation: Any, table: Any, position: Any) -> bool:
            nonlocal calls
            if table.name == "chunks":
                calls += 1
                if calls == 2:
                    raise RuntimeError("worker lost")
            return real_record(generation, table, position)

        generations._record = record_then_die
        try:
            with pytest.raises(RuntimeError):
                generations.generation_build(second.pk)
        finally:
            generations._record = real_record
            generations.BATCH = original
        second.refresh_from_db()
        position = second.progress["chunks"]
        assert position["done"] == 2 and not position.get("finished")
        requests_before = len(narrow.requests_to("/v1/embeddings"))
        assert generations.generation_build(second.pk) == "built"
        # Resumed: the chunks already embedded were not sent again.
        resent = [
            text
            for request in narrow.requests_to("/v1/embeddings")[requests_before:]
            for text in request.body["input"]
        ]
        assert len([t for t in resent if "Tide pilots" in t or "Beekeepers" in t]) <= 1
        second.refresh_from_db()
        assert second.status == "ready" and second.role == "next"
        # Searches read the wide generation until the cut-over by hand.
        assert get_embedding_provider().model_id == "openai:wide-embedder"
        generations.generation_cutover()
        generations.forget_state()
        assert get_embedding_provider().model_id == "openai:narrow-embedder"
        assert _column_type("rag_chunk", "embedding") == "vector(384)"
        assert _top_title(agent_client, "ice cores snow")[0] == "glaciers"
        generations.generation_drop()
    reset_embedding_provider()


def test_start_refuses_clearly(agent_client: AuthedAgent, settings: Any) -> None:
    settings.EMBEDDING_NEXT_PROVIDER = None
    settings.EMBEDDING_NEXT_MODEL = None
    reset_embedding_provider()
    with pytest.raises(generations.Conflict) as refused:
        generations.generation_start()
    assert refused.value.code == "next_model_not_configured"
    with pytest.raises(generations.Conflict) as refused:
        generations.generation_cutover()
    assert refused.value.code == "no_generation_to_cut_over"
    with pytest.raises(generations.NotFound) as missing:
        generations.generation_drop()
    assert missing.value.code == "no_generation_to_drop"


def test_the_api_needs_the_admin_scope_and_answers_with_codes(
    make_agent_client: Any, wide_model: OpenAIStandIn
) -> None:
    reader = make_agent_client(scopes=("read", "write"))
    assert reader.client.get("/api/v1/embeddings").status_code == 403
    admin = make_agent_client(scopes=("admin",))
    found = admin.client.get("/api/v1/embeddings")
    assert found.status_code == 200, found.content
    assert found.json()["current"]["role"] == "current"
    assert found.json()["next_configured"]["dimensions"] == 1536
    refused = admin.client.post("/api/v1/embeddings/cutover", {}, format="json")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "no_generation_to_cut_over"
    started = admin.client.post("/api/v1/embeddings/start", {"auto_cutover": False}, format="json")
    assert started.status_code == 202, started.content
    body = started.json()
    assert body["next"]["status"] in {"building", "ready"}
    assert body["next"]["model_id"] == "openai:wide-embedder"
    bad = admin.client.post("/api/v1/embeddings/start", {"auto_cutover": "maybe"}, format="json")
    assert bad.status_code == 400
    dropped = admin.client.post("/api/v1/embeddings/drop", {}, format="json")
    assert dropped.status_code == 200 and dropped.json()["next"] is None


def test_the_admin_page_shows_the_spaces_and_acts_for_operators(
    admin_client: Any, client: Any, django_user_model: Any, wide_model: OpenAIStandIn
) -> None:
    page = admin_client.get("/admin/core/embeddinggeneration/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="generation-spaces"' in html and "document chunks" in html
    assert "openai:wide-embedder" in html  # the configured next model, ready to start
    started = admin_client.post("/admin/core/embeddinggeneration/act/start_manual/")
    assert started.status_code == 302
    building = EmbeddingGeneration.objects.get(role="next")
    assert building.model_id == "openai:wide-embedder" and building.auto_cutover is False
    page = admin_client.get("/admin/core/embeddinggeneration/")
    assert 'id="generation-progress"' in page.content.decode()
    refused = admin_client.post("/admin/core/embeddinggeneration/act/rollback/", follow=True)
    assert "no_previous_generation" in refused.content.decode()
    assert admin_client.get("/admin/core/embeddinggeneration/act/drop/").status_code == 405
    admin_client.post("/admin/core/embeddinggeneration/act/drop/")
    assert not EmbeddingGeneration.objects.filter(role="next").exists()
    # Staff who are not installation operators see neither the page nor the actions.
    staff = django_user_model.objects.create_user("staff", password="pw-123456789", is_staff=True)
    client.force_login(staff)
    assert client.get("/admin/core/embeddinggeneration/").status_code in {302, 403}
    assert client.post("/admin/core/embeddinggeneration/act/start/").status_code in {302, 403}
    assert not EmbeddingGeneration.objects.filter(role="next").exists()


def test_the_rot_report_lists_vectors_of_another_model(
    agent_client: AuthedAgent, corpus: list[int], other_agent_client: AuthedAgent
) -> None:
    from memory.maintenance.selectors import rot

    actor = actor_for_agent(agent_client.agent)
    section = next(s for s in rot.rot_report(actor=actor).sections if s.kind == "stale_vectors")
    assert section.total == 0
    Chunk.objects.filter(document_id__in=corpus[:2]).update(embedding_model="old:model")
    section = next(s for s in rot.rot_report(actor=actor).sections if s.kind == "stale_vectors")
    assert section.total == 1
    (item,) = section.items
    assert item.data["space"] == "chunks" and item.data["count"] == 2
    assert item.data["models"] == {"old:model": 2}
    # Another account's report counts its own units only.
    intruder = actor_for_agent(other_agent_client.agent)
    found = next(s for s in rot.rot_report(actor=intruder).sections if s.kind == "stale_vectors")
    assert found.total == 0


def test_an_unset_next_width_is_learned_from_the_model(
    agent_client: AuthedAgent, corpus: list[int], settings: Any
) -> None:
    with OpenAIStandIn(embedding_dimensions=768, semantic=True) as server:
        _configure_next(settings, server, "learned-width", 1536)
        settings.EMBEDDING_NEXT_DIMENSIONS = None
        reset_embedding_provider()
        generation = generations.generation_start(auto_cutover=False, enqueue=False)
        assert generation.dimensions == 768
        assert _column_type("rag_chunk", "embedding_next") == "vector(768)"
        assert generations.generation_build(generation.pk) == "built"
        generations.generation_drop()
    reset_embedding_provider()


def test_a_next_model_that_cannot_be_built_never_breaks_search(
    agent_client: AuthedAgent, corpus: list[int], settings: Any
) -> None:
    settings.EMBEDDING_NEXT_PROVIDER = "local"
    settings.EMBEDDING_NEXT_MODEL = "not-a-local-model"
    reset_embedding_provider()
    title, _ = _top_title(agent_client, "harbour tide tables")
    assert title == "tides"
    with pytest.raises(generations.Conflict) as refused:
        generations.generation_start()
    assert refused.value.code == "next_model_not_configured"
    reset_embedding_provider()


def test_a_unit_written_while_it_is_embedded_is_left_to_the_sweep(
    agent_client: AuthedAgent, corpus: list[int], wide_model: OpenAIStandIn
) -> None:
    generations.generation_start(auto_cutover=False, enqueue=False)
    chunk = Chunk.objects.filter(document_id=corpus[0]).first()
    assert chunk is not None
    table = generations.embedded_table("chunks")
    real_texts = table.texts

    def texts_then_a_write(ids: Any) -> dict[int, str]:
        found = real_texts(ids)
        Chunk.objects.filter(pk=chunk.pk).update(text="Rewritten while it was embedded.")
        return found

    racing = dataclasses.replace(table, texts=texts_then_a_write)
    provider = generations.next_provider()
    assert provider is not None
    assert generations.embed_units(racing, [chunk.pk], provider, column="embedding_next") == 0
    assert Chunk.objects.get(pk=chunk.pk).embedding_next_model == ""
    assert generations.embed_units(table, [chunk.pk], provider, column="embedding_next") == 1
    generations.generation_drop()


def test_the_api_counts_the_callers_own_units_only(
    make_agent_client: Any, corpus: list[int], agent_client: AuthedAgent
) -> None:
    """The generations are the installation's; the counts the API answers are not: another
    account's admin key sees none of the chunks ``corpus`` put in ``agent_client``'s account."""
    intruder = make_agent_client(scopes=("admin",))
    spaces = {s["space"]: s for s in intruder.client.get("/api/v1/embeddings").json()["spaces"]}
    assert spaces["chunks"]["units"] == 0
    assert "articles" not in spaces  # the installation's, not an account's
    owner = make_agent_client(scopes=("admin",), agent=agent_client.agent)
    mine = {s["space"]: s for s in owner.client.get("/api/v1/embeddings").json()["spaces"]}
    assert mine["chunks"]["units"] == 5
    installation = generations.generation_status()
    assert any(s["space"] == "articles" for s in installation["spaces"])
