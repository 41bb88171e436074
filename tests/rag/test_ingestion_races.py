"""Writes racing ingestion never lose updates: real concurrent transactions on PostgreSQL.

The pipeline computes outside any transaction and swaps inside one that holds the knowledge
base's row lock. These tests run a second request on its own connection exactly when that lock
matters (waiting on it, or holding it), then compare the knowledge base's statistics and BM25
term frequencies with a rebuild from the chunks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection, connections, transaction
from rest_framework.test import APIClient

from core.actors import actor_for_agent
from rag import keyword, services
from rag.models import Document, KeywordTerm, KnowledgeBase
from rag.services import pipeline
from rag.services import swap as swap_module
from rag.spaces import CHUNKS
from tests.rag.test_ingestion import GUIDE, assert_index_consistent

pytestmark = pytest.mark.django_db(transaction=True)

KBS = "/api/v1/rag/knowledge-bases"


@pytest.fixture
def other_connection() -> Iterator[ThreadPoolExecutor]:
    """A thread for the concurrent request; Django gives it its own database connection."""
    pool = ThreadPoolExecutor(max_workers=2)
    yield pool

    def close() -> None:
        connections.close_all()

    pool.submit(close).result()
    pool.shutdown()


def api(agent_client, method: str, url: str, payload: dict[str, Any]) -> Any:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_client.secret}")
    try:
        return getattr(client, method)(url, payload, format="json")
    finally:
        connections.close_all()  # this thread's connection


def wait_for_lock_wait(pid: int | None = None, timeout: float = 20.0) -> None:
    """Until a backend (``pid``, or any other than ours) waits on a row lock."""
    deadline = time.monotonic() + timeout
    with connections["default"].cursor() as cursor:
        while time.monotonic() < deadline:
            # Inside a transaction the activity view is a snapshot taken once: refresh it.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() "
                "AND (%s::int IS NULL OR pid = %s::int)",
                [pid, pid],
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("no transaction ever waited on the lock")


def assert_matches_a_rebuild(kb: KnowledgeBase) -> None:
    """Statistics maintained incrementally equal those keyword.index_rebuild computes."""
    assert_index_consistent(kb)
    kb.refresh_from_db()
    before = (
        kb.chunk_count,
        kb.total_terms,
        dict(KeywordTerm.objects.filter(knowledge_base=kb).values_list("term", "df")),
    )
    keyword.index_rebuild(space=CHUNKS, scope_id=kb.pk)
    kb.refresh_from_db()
    after = (
        kb.chunk_count,
        kb.total_terms,
        dict(KeywordTerm.objects.filter(knowledge_base=kb).values_list("term", "df")),
    )
    assert before == after


def upload_batch(agent_client, kb: KnowledgeBase, texts: list[str]) -> list[Document]:
    return services.documents_create_batch(
        actor=actor_for_agent(agent_client.agent),
        kb=kb,
        uploads=[{"data": t.encode(), "content_type": "text/markdown"} for t in texts],
        enqueue=False,
    )


def on_first_swap(monkeypatch, action: Callable[[], None]) -> None:
    """Run ``action`` inside the first swap transaction, once it holds the knowledge base lock
    and before it writes the statistics it read under that lock."""
    real = swap_module._swap_in_knowledge_base
    done: list[bool] = []

    def swap(kb, items, model_id):
        if not done:
            done.append(True)
            action()
        return real(kb, items, model_id)

    monkeypatch.setattr(swap_module, "_swap_in_knowledge_base", swap)


TEXTS = [
    GUIDE,
    "# Backups\n\nRun pg_dump nightly and keep the dumps for thirty days.",
    "# Workers\n\nCelery workers process documents; Valkey is the broker.",
]


def test_a_kb_patch_racing_ingestion_keeps_statistics_exact(
    agent_client, other_connection, monkeypatch
) -> None:
    created = agent_client.client.post(KBS, {"name": "Race", "chunk_size": 64}, format="json")
    kb = KnowledgeBase.objects.get(pk=created.json()["id"])
    documents = upload_batch(agent_client, kb, TEXTS)
    patch: list[Future[Any]] = []

    def patch_while_the_swap_holds_the_lock() -> None:
        # The PATCH reads the knowledge base (statistics still empty), then its UPDATE waits
        # for the swap's lock; it must not write what it read back over the swap's figures.
        patch.append(
            other_connection.submit(
                api,
                agent_client,
                "patch",
                f"{KBS}/{kb.pk}",
                {"description": "edited during ingestion", "chunk_overlap": 4},
            )
        )
        wait_for_lock_wait()

    on_first_swap(monkeypatch, patch_while_the_swap_holds_the_lock)
    outcomes = services.documents_process_batch(document_ids=[d.pk for d in documents])
    response = patch[0].result(timeout=30)

    assert outcomes == {"indexed": 3}
    assert response.status_code == 200, response.json()
    kb.refresh_from_db()
    assert (kb.description, kb.chunk_overlap) == ("edited during ingestion", 4)
    assert kb.chunk_count > 0
    assert response.json()["chunk_count"] == kb.chunk_count  # it answered the fresh row
    assert_matches_a_rebuild(kb)


def test_ingestion_waiting_for_a_kb_patch_reads_the_statistics_after_it(
    agent_client, other_connection, monkeypatch
) -> None:
    """The other order: the PATCH holds the row lock while the swap asks for it."""
    from core import writes

    created = agent_client.client.post(KBS, {"name": "Race 2", "chunk_size": 64}, format="json")
    kb = KnowledgeBase.objects.get(pk=created.json()["id"])
    first = upload_batch(agent_client, kb, TEXTS[:1])
    assert services.documents_process_batch(document_ids=[d.pk for d in first]) == {"indexed": 1}
    rest = upload_batch(agent_client, kb, TEXTS[1:])

    holding = threading.Event()
    release = threading.Event()
    real_audit = writes.audit_record

    def audit_then_hold(**kwargs):
        real_audit(**kwargs)
        holding.set()  # the PATCH's UPDATE holds the row lock until its transaction commits
        assert release.wait(timeout=30)

    # Every update's audit event is written inside its transaction (core.writes.row_update).
    monkeypatch.setattr(writes, "audit_record", audit_then_hold)
    pid = connection.cursor().connection.info.backend_pid
    patch = other_connection.submit(
        api, agent_client, "patch", f"{KBS}/{kb.pk}", {"name": "Renamed meanwhile"}
    )
    assert holding.wait(timeout=30)

    def release_once_ingestion_waits() -> None:
        wait_for_lock_wait(pid)
        release.set()

    waiter = other_connection.submit(release_once_ingestion_waits)
    outcomes = services.documents_process_batch(document_ids=[d.pk for d in rest])
    waiter.result(timeout=30)

    assert outcomes == {"indexed": 2}
    assert patch.result(timeout=30).status_code == 200
    kb.refresh_from_db()
    assert kb.name == "Renamed meanwhile"
    assert_matches_a_rebuild(kb)


def test_pausing_a_kb_while_ingestion_runs_is_not_undone(
    agent_client, other_connection, monkeypatch
) -> None:
    """Documents already claimed finish; nothing more is claimed; the pause stands."""
    created = agent_client.client.post(KBS, {"name": "Pause", "chunk_size": 64}, format="json")
    kb = KnowledgeBase.objects.get(pk=created.json()["id"])
    documents = upload_batch(agent_client, kb, TEXTS)
    monkeypatch.setattr(pipeline, "CLAIM_DOCUMENTS", 1)
    monkeypatch.setattr(pipeline, "GROUP_CHUNKS", 1)
    paused: list[Future[Any]] = []

    def pause_while_the_swap_holds_the_lock() -> None:
        paused.append(
            other_connection.submit(
                api, agent_client, "post", f"{KBS}/{kb.pk}/status", {"status": "paused"}
            )
        )
        wait_for_lock_wait()

    on_first_swap(monkeypatch, pause_while_the_swap_holds_the_lock)
    real_swap_embedded = pipeline._swap_embedded

    def then_let_the_pause_commit(*args, **kwargs):
        real_swap_embedded(*args, **kwargs)
        paused[0].result(timeout=30)  # before the batch claims its next document

    monkeypatch.setattr(pipeline, "_swap_embedded", then_let_the_pause_commit)
    outcomes = services.documents_process_batch(document_ids=[d.pk for d in documents])
    response = paused[0].result()

    assert response.status_code == 200 and response.json()["status"] == "paused"
    kb.refresh_from_db()
    assert kb.status == KnowledgeBase.Status.PAUSED
    # The first two were claimed before the pause (one group is embedded while the previous
    # one is written); the third was not claimed.
    statuses = [Document.objects.get(pk=d.pk).status for d in documents]
    assert statuses == ["indexed", "indexed", "pending"]
    assert outcomes == {"indexed": 2, "skipped": 1}
    assert_matches_a_rebuild(kb)

    # Resuming processes the rest; the pause was only ever undone by a person.
    resumed = agent_client.client.post(f"{KBS}/{kb.pk}/status", {"status": "active"}, format="json")
    assert resumed.status_code == 200
    again = services.documents_process_batch(document_ids=[d.pk for d in documents])
    assert again == {"indexed": 1, "skipped": 2}  # the indexed ones are not claimed again
    assert Document.objects.filter(pk__in=[d.pk for d in documents], status="indexed").count() == 3
    assert_matches_a_rebuild(kb)


def test_deleting_a_kb_locks_the_kb_before_its_documents(agent_client, other_connection) -> None:
    """As an ingestion swap does: the knowledge base's row first, then documents and chunks.
    Taking the documents first deadlocked with an ingestion writing them (a 503 in CI)."""
    created = agent_client.client.post(KBS, {"name": "Doomed", "chunk_size": 64}, format="json")
    kb = KnowledgeBase.objects.get(pk=created.json()["id"])
    (document,) = upload_batch(agent_client, kb, TEXTS[:1])
    with transaction.atomic():
        # Stand in for an ingestion swap: it holds the knowledge base's row...
        KnowledgeBase.objects.select_for_update().get(pk=kb.pk)
        deleted = other_connection.submit(api, agent_client, "delete", f"{KBS}/{kb.pk}", {})
        wait_for_lock_wait()
        # ...and must still be able to write its documents: the delete waits on the knowledge
        # base without having locked any of them.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM rag_document WHERE id = %s FOR UPDATE NOWAIT", [document.pk]
            )
            assert cursor.fetchone() == (document.pk,)
    assert deleted.result(timeout=30).status_code == 204
    assert not KnowledgeBase.objects.filter(pk=kb.pk).exists()


def test_two_graph_indexings_of_one_document_at_once_do_not_collide(
    agent_client, other_connection
) -> None:
    """A document's graph task and the catch-up job may index it at the same time: each replaces
    its chunks' mentions by a delete and an insert. The second waits for the first (a lock per
    scope) instead of failing on the first's rows (a unique violation, found by the fuzzer's
    server log), and the mentions are those of one indexing."""
    from rag.graph.entities import Entity
    from rag.graph.services import UnitEntities, mentions_replace
    from rag.models import Chunk, GraphMention

    created = agent_client.client.post(KBS, {"name": "Graph race", "chunk_size": 64}, format="json")
    kb = KnowledgeBase.objects.get(pk=created.json()["id"])
    (document,) = upload_batch(agent_client, kb, TEXTS[1:2])
    chunk = Chunk.objects.create(
        document=document, knowledge_base=kb, account_id=kb.account_id, position=0,
        text="Run pg_dump nightly.", token_count=4,
    )  # fmt: skip
    units = [
        UnitEntities(
            chunk.pk,
            kb.pk,
            [Entity("Ada Holm", "person", 1.0), Entity("Tern Club", "organisation", 0.5)],
            [],
        )
    ]

    def index() -> Any:
        try:
            return mentions_replace(account_id=kb.account_id, space=CHUNKS, units=units)
        finally:
            connections.close_all()

    mentions_replace(account_id=kb.account_id, space=CHUNKS, units=units)  # the nodes exist
    with transaction.atomic():
        mentions_replace(account_id=kb.account_id, space=CHUNKS, units=units)
        second = other_connection.submit(index)
        wait_for_lock_wait()  # on this transaction's scope lock, not on its rows
    assert second.result(timeout=30).mentions == 2
    assert GraphMention.objects.filter(space="chunks", unit_id=chunk.pk).count() == 2
