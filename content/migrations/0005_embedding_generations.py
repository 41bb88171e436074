"""Index generations: the current generation's vector column beside the other's
(``core.embeddings.schema.generation_columns``)."""

from django.db import migrations

from core.embeddings.schema import generation_columns


class Migration(migrations.Migration):
    dependencies = [
        ("content", "0004_sync_pending"),
        ("core", "0006_embedding_generations"),
    ]

    operations = [
        *generation_columns(model_name="page", table="content_page", old_index=""),
        *generation_columns(model_name="article", table="content_article", old_index=""),
    ]
