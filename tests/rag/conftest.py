from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.actors import Actor, actor_for_agent
from rag import services
from rag.models import Document, KnowledgeBase
from tests.conftest import AuthedAgent


@pytest.fixture
def actor(agent_client: AuthedAgent) -> Actor:
    return actor_for_agent(agent_client.agent)


@pytest.fixture
def kb(actor: Actor) -> KnowledgeBase:
    return services.knowledge_base_create(
        actor=actor, name="Handbook", chunk_size=64, chunk_overlap=8
    )


@pytest.fixture
def ingest(
    actor: Actor, kb: KnowledgeBase, django_capture_on_commit_callbacks: Any
) -> Callable[..., Document]:
    """Upload text and run the real pipeline (the on-commit task runs eagerly)."""

    def upload(text: str, *, target: KnowledgeBase | None = None, **kwargs: Any) -> Document:
        metadata = services.DocumentMetadata(**kwargs.pop("meta", {}))
        with django_capture_on_commit_callbacks(execute=True):
            document = services.document_create(
                actor=actor,
                kb=target or kb,
                data=text.encode(),
                content_type=kwargs.pop("content_type", "text/markdown"),
                metadata=metadata,
                **kwargs,
            )
        document.refresh_from_db()
        return document

    return upload
