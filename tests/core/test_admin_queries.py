"""Admin lists of large tables: a bounded number of queries whatever the rows, never a COUNT
over chunks, never the uploaded originals or the vectors."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from core import services
from core.actors import actor_for_account
from core.admin_base import EstimatedCountPaginator
from rag import services as rag_services
from rag.models import Chunk, Document, KnowledgeBase
from tests.factories import AccountFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup() -> tuple[Client, KnowledgeBase]:
    account = AccountFactory.create()
    user = UserFactory.create(is_staff=True)
    services.membership_grant(account=account, user=user, role="operator")
    kb = rag_services.knowledge_base_create(actor=actor_for_account(account.pk), name="KB")
    client = Client()
    client.force_login(user)
    return client, kb


def add_documents(kb: KnowledgeBase, n: int) -> list[Document]:
    actor = actor_for_account(kb.account_id)
    uploads = [
        {"data": f"# Doc {i}\n\nbody {i}".encode(), "filename": f"d{i}.md"} for i in range(n)
    ]
    return rag_services.documents_create_batch(actor=actor, kb=kb, uploads=uploads, enqueue=False)


def add_chunks(document: Document, n: int) -> None:
    Chunk.objects.bulk_create(
        Chunk(
            account_id=document.account_id,
            knowledge_base_id=document.knowledge_base_id,
            document=document,
            position=i,
            text=f"chunk {i}",
            token_count=2,
            embedding=[0.1] * 384,
            embedding_model="test-model",
        )
        for i in range(n)
    )


def changelist_queries(client: Client, name: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse(f"admin:{name}_changelist"))
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def selects_column(queries: list[str], table: str, column: str) -> bool:
    return any(f'"{table}"."{column}"' in q for q in queries if q.lstrip().startswith("SELECT"))


def test_document_changelist_queries_are_bounded_and_skip_originals(setup: Any) -> None:
    client, kb = setup
    add_documents(kb, 3)
    few = changelist_queries(client, "rag_document")
    add_documents(kb, 40)
    many = changelist_queries(client, "rag_document")
    assert len(many) == len(few) <= 10, many
    assert not selects_column(many, "rag_document", "original")


def test_chunk_changelist_never_counts_and_skips_vectors(setup: Any) -> None:
    client, kb = setup
    documents = add_documents(kb, 2)
    add_chunks(documents[0], 3)
    few = changelist_queries(client, "rag_chunk")
    add_chunks(documents[1], 150)
    many = changelist_queries(client, "rag_chunk")
    assert len(many) == len(few) <= 10, many
    assert not any(re.search(r"\bCOUNT\(", q, re.IGNORECASE) for q in many), many
    assert not selects_column(many, "rag_chunk", "embedding")
    assert not selects_column(many, "rag_document", "original")


def test_beyond_the_exact_range_the_planner_estimates(setup: Any, monkeypatch: Any) -> None:
    _, kb = setup
    documents = add_documents(kb, 1)
    add_chunks(documents[0], 30)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rag_chunk")
    queryset = Chunk.objects.filter(knowledge_base=kb).order_by("position")
    assert EstimatedCountPaginator(queryset, 10).count == 30  # exact: within the range
    monkeypatch.setattr(EstimatedCountPaginator, "exact_up_to", 5)
    with CaptureQueriesContext(connection) as captured:
        paginator = EstimatedCountPaginator(queryset, 10)
        estimate = paginator.count
    assert estimate >= 6  # at least what it saw; the planner's figure beyond
    assert any(q["sql"].startswith("EXPLAIN") for q in captured.captured_queries)
    assert not any("COUNT(" in q["sql"].upper() for q in captured.captured_queries)
    assert [c.position for c in paginator.page(1).object_list] == list(range(10))
