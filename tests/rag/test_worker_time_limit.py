"""The soft time limit as a real prefork worker enforces it."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connections
from django.utils import timezone

from config.celery import app
from core.actors import actor_for_agent
from core.embeddings import get_embedding_provider
from rag import services, tasks
from rag.models import Chunk, Document
from rag.services import pipeline


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_soft_time_limit_fails_the_document(agent_client, monkeypatch) -> None:
    actor = actor_for_agent(agent_client.agent)
    kb = services.knowledge_base_create(actor=actor, name="Slow")
    document = services.document_create(
        actor=actor,
        kb=kb,
        data=b"A document whose embedding never finishes.",
        content_type="text/plain",
        enqueue=False,
    )

    real = get_embedding_provider()

    class NeverFinishes:
        """The real provider's identity, with an embedding call that outlasts the limit."""

        model_id = real.model_id
        dimensions = real.dimensions

        def embed_documents(self, texts):
            time.sleep(60)

    # The pool's child processes are forks of this one and inherit the patch. (A fork must not
    # build the ONNX model this process already ran: its runtime is not fork-safe.)
    monkeypatch.setattr(pipeline, "get_embedding_provider", NeverFinishes)
    connections.close_all()
    app.conf.task_always_eager = False
    try:
        # A queue of its own: no other test's worker (they share the broker) takes the task.
        queue = f"test-time-limit-{uuid.uuid4().hex}"
        with start_worker(
            app,
            pool="prefork",
            concurrency=1,
            perform_ping_check=False,
            shutdown_timeout=20,
            queues=[queue],
        ):
            tasks.process_document.apply_async(
                (document.pk,), queue=queue, soft_time_limit=1, time_limit=30
            )
            deadline = timezone.now() + timedelta(seconds=30)
            while timezone.now() < deadline:
                document.refresh_from_db()
                if document.status != Document.Status.PENDING and not document.processing_task_id:
                    break
                time.sleep(0.2)
    finally:
        app.conf.task_always_eager = True
    assert document.status == Document.Status.FAILED
    assert document.error == "Timed out: processing took longer than the 1 s soft time limit."
    assert not Chunk.objects.filter(document=document).exists()
