"""Read replicas (core/db_router.py; docs/operations.md, "Read replicas") against a real
streaming replica of the test server (tests/support/replica.py): searches read the replica,
a request that wrote reads the primary, migrations and writes never reach a replica, and a
replica that is down leaves searches on the primary without an error.

Replay on the replica is paused where a test must tell the two servers apart by their data:
what the primary wrote after the pause is, deterministically, only on the primary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import connection, connections, router, transaction

from core.actors import actor_for_agent
from core.db_router import (
    primary_reads,
    read_alias,
    read_connection,
    read_scope,
    replica_reads,
)
from core.side_by_side import side_by_side
from rag import services
from rag.models import KnowledgeBase
from rag.search import SearchFilters, chunk_search
from tests.conftest import AuthedAgent
from tests.support.replica import (
    DATABASES,
    DOWN,
    REPLICA,
    Standby,
    wait_replayed,
)
from tests.support.replica import replica_alias as replica_alias
from tests.support.replica import streaming_replica as streaming_replica

SEARCH = "/api/v1/rag/search"
# BM25 only: a hit means the server read has the words (the vector stage always answers).
KEYWORD_FOG = {"query": "lighthouse keeper fog", "mode": "keyword"}
KBS = "/api/v1/rag/knowledge-bases"

pytestmark = [
    pytest.mark.slow,  # starts a PostgreSQL server: CI's first phase only
    pytest.mark.embedded,  # a base backup of the embedded server, over its unix socket
    # The replica sees only what was committed.
    pytest.mark.django_db(transaction=True, databases=DATABASES),
    pytest.mark.xdist_group("read-replica"),  # one worker, one replica
]


def _in_recovery(alias: str) -> bool:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        return bool(cursor.fetchone()[0])


@replica_reads
def _search_alias() -> tuple[str, bool]:
    """Where a search's raw SQL reads, and whether that server is a standby."""
    db = read_connection()
    with db.cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        return db.alias, bool(cursor.fetchone()[0])


def _upload(client: Any, kb_id: int, title: str, text: str) -> None:
    response = client.post(
        f"{KBS}/{kb_id}/documents",
        {"title": title, "content_type": "text/markdown", "text": text},
        format="json",
    )
    assert response.status_code == 201, response.json()


def _titles(response: Any) -> set[str]:
    assert response.status_code == 200, response.json()
    return {hit["document_title"] for hit in response.json()["results"]}


@pytest.fixture
def paused(replica_alias: Standby) -> Iterator[Standby]:
    """The replica caught up with the primary, then its replay paused (resumed at the end)."""
    wait_replayed(replica_alias)
    with replica_alias.connect() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    yield replica_alias


@pytest.fixture
def kb_with_one_document(agent_client: AuthedAgent) -> dict[str, Any]:
    client = agent_client.client
    kb = client.post(KBS, {"name": "Harbour", "chunk_size": 64, "chunk_overlap": 8}, format="json")
    assert kb.status_code == 201, kb.json()
    _upload(client, kb.json()["id"], "Tides", "The harbour pilots board ships at high tide.")
    return kb.json()


def test_a_search_reads_the_replica_and_a_request_that_wrote_reads_the_primary(
    agent_client: AuthedAgent, kb_with_one_document: dict[str, Any], paused: Standby
) -> None:
    client = agent_client.client
    # Written after the pause: on the primary only, until replay resumes.
    _upload(client, kb_with_one_document["id"], "Lighthouse", "The lighthouse keeper logs fog.")

    # A search with no write before it in its request reads the replica: the first document
    # is there, the second not yet.
    assert _titles(
        client.post(SEARCH, {"query": "harbour pilots tide", "mode": "keyword"}, format="json")
    ) == {"Tides"}
    assert _titles(client.post(SEARCH, KEYWORD_FOG, format="json")) == set()

    # The same search in a request that wrote first reads the primary and sees the write.
    actor = actor_for_agent(agent_client.agent)
    kb = KnowledgeBase.objects.get(pk=kb_with_one_document["id"])
    with read_scope():
        assert _search_alias() == (REPLICA, True)
        services.knowledge_base_update(actor=actor, kb=kb, description="written")
        assert _search_alias() == ("default", False)
        found = chunk_search(
            actor=actor,
            query="lighthouse keeper fog",
            mode="keyword",
            filters=SearchFilters(knowledge_base_ids=(kb.pk,)),
        )
        assert {hit.document_title for hit in found.hits} == {"Lighthouse"}

    # Replay resumed and caught up: the replica answers with the second document too.
    with paused.connect() as conn:
        conn.execute("SELECT pg_wal_replay_resume()")
    wait_replayed(paused)
    assert _titles(client.post(SEARCH, KEYWORD_FOG, format="json")) == {"Lighthouse"}


def test_raw_sql_writes_pin_the_request_to_the_primary(
    agent_client: AuthedAgent, kb_with_one_document: dict[str, Any], replica_alias: Standby
) -> None:
    with read_scope():
        with connection.cursor() as cursor:  # a read on the primary does not pin
            cursor.execute("SELECT count(*) FROM rag_knowledgebase")
        assert _search_alias() == (REPLICA, True)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE rag_knowledgebase SET description = 'raw' WHERE id = %s",
                [kb_with_one_document["id"]],
            )
        assert _search_alias() == ("default", False)
    with read_scope():  # the next request starts on the replica again
        assert _search_alias() == (REPLICA, True)


def test_only_lag_tolerant_reads_in_a_scope_outside_transactions_go_to_a_replica(
    agent_client: AuthedAgent, replica_alias: Standby
) -> None:
    assert _search_alias() == ("default", False)  # no request or task: the primary
    with read_scope():
        assert read_alias() == "default"  # not declared lag-tolerant
        assert router.db_for_read(KnowledgeBase) == "default"
        assert _search_alias() == (REPLICA, True)
        # ORM reads inside a search go to the same replica.
        assert replica_reads(lambda: router.db_for_read(KnowledgeBase))() == REPLICA
        # Inside transaction.atomic: the primary.
        with transaction.atomic():
            assert _search_alias() == ("default", False)
        # An outer primary_reads (context assembly) wins over the searches inside it.
        assert primary_reads(_search_alias)() == ("default", False)
    with read_scope():
        # A Celery task (here run inside a request, as an eager task is) reads the primary;
        # the request reads as before once the task ended.
        task_prerun.send(sender=None, task_id="replica-test-task", task=None)
        try:
            assert _search_alias() == ("default", False)
        finally:
            task_postrun.send(sender=None, task_id="replica-test-task", task=None, state="SUCCESS")
        assert _search_alias() == (REPLICA, True)


def test_reads_side_by_side_follow_their_callers_scope(
    agent_client: AuthedAgent, kb_with_one_document: dict[str, Any], replica_alias: Standby
) -> None:
    reads = {"first": _search_alias, "second": _search_alias}
    with read_scope():
        assert side_by_side(reads) == {"first": (REPLICA, True), "second": (REPLICA, True)}
        KnowledgeBase.objects.filter(pk=kb_with_one_document["id"]).update(description="w")
        assert side_by_side(reads) == {"first": ("default", False), "second": ("default", False)}


def test_writes_and_migrations_never_go_to_a_replica(
    agent_client: AuthedAgent, replica_alias: Standby
) -> None:
    assert router.allow_migrate(REPLICA, "rag") is False
    assert router.allow_migrate("default", "rag") is True
    actor = actor_for_agent(agent_client.agent)

    @replica_reads
    def write_inside_a_search() -> KnowledgeBase:
        assert router.db_for_write(KnowledgeBase) == "default"
        return services.knowledge_base_create(actor=actor, name="Written in a search")

    with read_scope():
        kb = write_inside_a_search()
        assert kb._state.db == "default"
        assert _search_alias() == ("default", False)
    wait_replayed(replica_alias)
    with replica_alias.connect() as conn:  # and it reached the replica by replication only
        row = conn.execute("SELECT name FROM rag_knowledgebase WHERE id = %s", [kb.pk]).fetchone()
        assert row == ("Written in a search",)
        with pytest.raises(Exception, match="read-only transaction"):
            conn.execute("UPDATE rag_knowledgebase SET name = 'x' WHERE id = %s", [kb.pk])


def test_a_replica_that_is_down_falls_back_to_the_primary(
    agent_client: AuthedAgent,
    kb_with_one_document: dict[str, Any],
    replica_alias: Standby,
    settings: Any,
) -> None:
    settings.DATABASE_REPLICAS = (DOWN,)  # its socket directory has no server: refused at once
    response = agent_client.client.post(SEARCH, {"query": "harbour pilots"}, format="json")
    assert _titles(response) == {"Tides"}
    with read_scope():
        assert _search_alias() == ("default", False)
        assert connections[DOWN].connection is None  # marked down: not retried at once

    # Beside a working replica, the one that is down is skipped.
    settings.DATABASE_REPLICAS = (DOWN, REPLICA)
    with read_scope():
        assert _search_alias() == (REPLICA, True)
    assert _in_recovery(REPLICA)
