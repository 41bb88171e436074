"""Derived data keeps the visibility of its source: a knowledge item records the context it was
extracted from (``source_context``; NULL: written explicitly, account-wide), and a key names one
current item per source.

Backfill, from the extraction's own records:

- the item versions an extraction wrote (its ``add`` and ``update`` rows) come from the
  conversation's context; a version whose rows went with a deleted conversation is traced by
  what extraction wrote on it (metadata ``conversation_id`` and message sources), and a
  conversation that is gone gives context 0, which no agent reads;
- the graph node of an item lineage whose current version is private becomes private too,
  named after its context as new ones are (``<base>/<key> (context <id>)``; its BM25 postings
  keep the old name until ``index_rebuild``);
- the graph nodes and edges extraction made (its ``add`` rows, and ``extracted_from:
  conversation:<id>``) come from the conversation's context.
"""

from django.db import migrations, models

_BACKFILL = """
UPDATE memory_knowledgeitem k SET source_context_id = c.context_id
FROM memory_extraction x JOIN memory_conversation c ON c.id = x.conversation_id
WHERE x.knowledge_item_id = k.id AND x.kind = 'fact' AND x.decision IN ('add', 'update');

UPDATE memory_knowledgeitem k SET source_context_id = coalesce(
    (SELECT c.context_id FROM memory_conversation c
     WHERE c.id = (k.metadata->>'conversation_id')::bigint), 0)
WHERE k.source_context_id IS NULL AND jsonb_typeof(k.metadata->'conversation_id') = 'number'
  AND EXISTS (SELECT FROM memory_knowledgesource s
              WHERE s.item_id = k.id AND s.source_type = 'conversation_message');

UPDATE rag_graphnode n SET derived_space = 'memory_entries',
    derived_scope_id = k.source_context_id,
    name = left(n.name || ' (context ' || k.source_context_id || ')', 500),
    name_key = left(n.name_key || ' context ' || k.source_context_id, 500)
FROM memory_knowledgeitem k
WHERE k.graph_node_id = n.id AND k.is_current AND k.source_context_id IS NOT NULL
  AND n.derived_scope_id IS NULL;

UPDATE rag_graphnode n SET derived_space = 'memory_entries', derived_scope_id = c.context_id
FROM memory_extraction x JOIN memory_conversation c ON c.id = x.conversation_id
WHERE x.graph_node_id = n.id AND x.kind = 'entity' AND x.decision = 'add'
  AND n.derived_scope_id IS NULL;

UPDATE rag_graphnode n SET derived_space = 'memory_entries', derived_scope_id = coalesce(
    (SELECT c.context_id FROM memory_conversation c
     WHERE 'conversation:' || c.id = n.metadata->>'extracted_from'), 0)
WHERE n.derived_scope_id IS NULL AND n.metadata->>'extracted_from' LIKE 'conversation:%';

UPDATE rag_graphedge e SET derived_space = 'memory_entries', derived_scope_id = c.context_id
FROM memory_extraction x JOIN memory_conversation c ON c.id = x.conversation_id
WHERE x.graph_edge_id = e.id AND x.kind = 'relation' AND x.decision = 'add'
  AND e.derived_scope_id IS NULL;

UPDATE rag_graphedge e SET derived_space = 'memory_entries', derived_scope_id = coalesce(
    (SELECT c.context_id FROM memory_conversation c
     WHERE 'conversation:' || c.id = e.metadata->>'extracted_from'), 0)
WHERE e.derived_scope_id IS NULL AND e.metadata->>'extracted_from' LIKE 'conversation:%';
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0015_entry_fillfactor"),
        ("rag", "0014_derived_visibility"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="knowledgeitem",
            name="knowledge_item_unique_current_key",
        ),
        migrations.AddField(
            model_name="knowledgeitem",
            name="source_context",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                editable=False,
                null=True,
                on_delete=models.deletion.DO_NOTHING,
                related_name="+",
                to="memory.memorycontext",
            ),
        ),
        migrations.RunSQL(_BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="knowledgeitem",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_current", True)),
                fields=("store", "key", "source_context"),
                name="knowledge_item_unique_current_key",
                nulls_distinct=False,
            ),
        ),
    ]
