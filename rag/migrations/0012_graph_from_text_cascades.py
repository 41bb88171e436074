"""PostgreSQL cascades the bulk rows of the graph built from text (mentions, community
members), and the names of existing nodes get their merge keys (``name_key``, ``alias_keys``).

A migration of its own: the foreign keys 0010 adds exist only at its end."""

from typing import Any

from django.db import migrations

from core.db import DatabaseOnDelete


def keys_fill(apps: Any, schema_editor: Any) -> None:
    from rag.graph.names import name_key

    node_model = apps.get_model("rag", "GraphNode")
    changed = []
    for node in node_model.objects.only("id", "name", "aliases").iterator(chunk_size=2000):
        node.name_key = name_key(node.name)
        node.alias_keys = [k for k in dict.fromkeys(map(name_key, node.aliases)) if k]
        changed.append(node)
        if len(changed) >= 2000:
            node_model.objects.bulk_update(changed, ["name_key", "alias_keys"])
            changed = []
    if changed:
        node_model.objects.bulk_update(changed, ["name_key", "alias_keys"])


class Migration(migrations.Migration):
    dependencies = [("rag", "0011_graph_from_text")]

    operations = [
        DatabaseOnDelete("rag_graphmention", "account_id", "CASCADE"),
        DatabaseOnDelete("rag_graphmention", "node_id", "CASCADE"),
        DatabaseOnDelete("rag_graphcommunitymember", "account_id", "CASCADE"),
        DatabaseOnDelete("rag_graphcommunitymember", "node_id", "CASCADE"),
        DatabaseOnDelete("rag_graphcommunitymember", "community_id", "CASCADE"),
        migrations.RunPython(keys_fill, migrations.RunPython.noop),
    ]
