"""PostgreSQL cascades the graph nodes' postings and term statistics (they exist in bulk).

A migration of its own: Django adds the foreign keys of the tables 0008 creates at the end of
that migration, so ``DatabaseOnDelete`` there would find no constraint to change.
"""

from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    dependencies = [("rag", "0008_knowledge_graph")]

    operations = [
        DatabaseOnDelete("rag_graphnodeposting", "scope_id", "CASCADE"),
        DatabaseOnDelete("rag_graphnodeposting", "node_id", "CASCADE"),
        DatabaseOnDelete("rag_graphnodeterm", "scope_id", "CASCADE"),
    ]
