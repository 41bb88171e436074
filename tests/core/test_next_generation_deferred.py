"""The embedded tables' default managers never load the other generation's vector and model
(``core.querysets.NextGenerationDeferred``): a row loaded and saved while a migration writes them
leaves what the migration wrote."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import Model
from pgvector.django import VectorField

from core.actors import actor_for_agent
from core.embeddings import generations
from memory.long_term import services as ltm
from memory.models import MemoryEntry
from tests.conftest import AuthedAgent


def _embedded_models() -> list[type[Model]]:
    tables = {table.table for table in generations.embedded_tables()}
    return [model for model in apps.get_models() if model._meta.db_table in tables]


def test_every_embedded_model_defers_the_other_generation() -> None:
    models = _embedded_models()
    assert len(models) == len(generations.embedded_tables())
    for model in models:
        assert any(isinstance(f, VectorField) for f in model._meta.concrete_fields)
        deferred, defer = model._default_manager.all().query.deferred_loading
        assert defer and {"embedding_next", "embedding_next_model"} <= set(deferred), model


@pytest.mark.django_db
def test_a_save_leaves_the_vector_a_migration_wrote_meanwhile(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    context = ltm.agent_memory_context(actor=actor)
    (written,) = ltm.entries_write(
        actor=actor, context=context, items=[ltm.EntryInput("Ana sails at dawn.")]
    )
    loaded = MemoryEntry.objects.get(pk=written.pk)
    assert {"embedding_next", "embedding_next_model"} <= loaded.get_deferred_fields()
    with connection.cursor() as cursor:  # the build embeds it for the next model meanwhile
        cursor.execute(
            "UPDATE memory_memoryentry SET embedding_next = '[1,0,0]', "
            "embedding_next_model = 'next-model' WHERE id = %s",
            [written.pk],
        )
    loaded.importance = 0.9
    loaded.save()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT embedding_next::text, embedding_next_model, importance "
            "FROM memory_memoryentry WHERE id = %s",
            [written.pk],
        )
        assert cursor.fetchone() == ("[1,0,0]", "next-model", 0.9)
