"""Index generations: the current generation's vector column beside the other's
(``core.embeddings.schema.generation_columns``)."""

from django.db import migrations

from core.embeddings.schema import generation_columns


class Migration(migrations.Migration):
    dependencies = [
        ("rag", "0016_graph_relation_mention_cascades"),
        ("core", "0006_embedding_generations"),
    ]

    operations = [
        *generation_columns(
            model_name="chunk",
            table="rag_chunk",
            old_index="rag_chunk_embedding_hnsw",
            nullable=False,
        ),
        *generation_columns(
            model_name="graphnode", table="rag_graphnode", old_index="graph_node_embedding_hnsw"
        ),
    ]
