"""Index generations: the current generation's vector column beside the other's
(``core.embeddings.schema.generation_columns``)."""

from django.db import migrations

from core.embeddings.schema import generation_columns


class Migration(migrations.Migration):
    dependencies = [
        ("skills", "0003_skillversion_execution_context"),
        ("core", "0006_embedding_generations"),
    ]

    operations = [
        *generation_columns(
            model_name="skill", table="skills_skill", old_index="skill_embedding_hnsw"
        ),
    ]
