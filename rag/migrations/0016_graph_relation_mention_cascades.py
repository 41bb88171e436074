"""PostgreSQL cascades the relation mentions (``GraphRelationMention``) with their edge and
account. A migration of its own: the foreign keys 0015 adds exist only at its end."""

from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    dependencies = [("rag", "0015_graph_relation_mentions")]

    operations = [
        DatabaseOnDelete("rag_graphrelationmention", "account_id", "CASCADE"),
        DatabaseOnDelete("rag_graphrelationmention", "edge_id", "CASCADE"),
    ]
