"""Index generations: the current generation's vector column beside the other's
(``core.embeddings.schema.generation_columns``)."""

from django.db import migrations

from core.embeddings.schema import generation_columns


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0019_entry_readings"),
        ("core", "0006_embedding_generations"),
    ]

    operations = [
        *generation_columns(
            model_name="memoryentry",
            table="memory_memoryentry",
            old_index="ltm_entry_embedding_hnsw",
        ),
        *generation_columns(
            model_name="knowledgeitem",
            table="memory_knowledgeitem",
            old_index="knowledge_item_embedding_hnsw",
        ),
    ]
