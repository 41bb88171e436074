"""Derived data keeps the visibility of its source (``rag.visibility``): graph nodes and edges
record the private scope they came from, and an edge of a type joins two nodes once per source.

Backfill of what rag alone knows (memory's migration ``0016_derived_visibility`` does the
extraction's nodes and edges, which only memory can trace to their conversations):

- nodes the long-term memory index made (``extracted_from: memory``) come from the context of
  their first memory mention (none left: scope 0, which no agent reads);
- relations that index wrote, from a context whose entries mention both ends;
- ``co_occurs`` edges are computed again from the mentions, one per pair and source: the units
  of document knowledge bases (open to the account) together, each memory context apart
  (salience 0.44: ``rag.services.graph_index.COOCCURRENCE_MIN_SALIENCE`` when this was written).
"""

from django.db import migrations, models

_BACKFILL = """
UPDATE rag_graphnode n SET derived_space = 'memory_entries', derived_scope_id = coalesce(
    (SELECT min(m.scope_id) FROM rag_graphmention m
     WHERE m.node_id = n.id AND m.space = 'memory_entries'), 0)
WHERE n.metadata->>'extracted_from' = 'memory';

UPDATE rag_graphedge e SET derived_space = 'memory_entries', derived_scope_id = coalesce(
    (SELECT min(a.scope_id) FROM rag_graphmention a
     JOIN rag_graphmention b ON b.space = a.space AND b.unit_id = a.unit_id
                             AND b.node_id = e.target_id
     WHERE a.node_id = e.source_id AND a.space = 'memory_entries'),
    (SELECT min(m.scope_id) FROM rag_graphmention m
     WHERE m.node_id = e.source_id AND m.space = 'memory_entries'), 0)
WHERE e.metadata->>'extracted_from' = 'memory' AND e.relation_type <> 'co_occurs';

DELETE FROM rag_graphedge WHERE relation_type = 'co_occurs';

INSERT INTO rag_graphedge (account_id, source_id, target_id, relation_type, weight, confidence,
    bidirectional, metadata, created_at, updated_at, derived_space, derived_scope_id)
SELECT a.account_id, a.node_id, b.node_id, 'co_occurs', count(*), 1.0, true, '{}'::jsonb,
       now(), now(),
       CASE WHEN a.space = 'chunks' THEN '' ELSE a.space END,
       CASE WHEN a.space = 'chunks' THEN NULL ELSE a.scope_id END
FROM rag_graphmention a
JOIN rag_graphmention b ON b.space = a.space AND b.unit_id = a.unit_id AND a.node_id < b.node_id
WHERE a.salience >= 0.44 AND b.salience >= 0.44
GROUP BY a.account_id, a.node_id, b.node_id,
         CASE WHEN a.space = 'chunks' THEN '' ELSE a.space END,
         CASE WHEN a.space = 'chunks' THEN NULL ELSE a.scope_id END;
"""

# Backwards: one edge per (source, target, type) again; the private co-occurrences go.
_UNDO = """
DELETE FROM rag_graphedge e WHERE e.derived_scope_id IS NOT NULL AND EXISTS (
    SELECT FROM rag_graphedge o WHERE o.source_id = e.source_id AND o.target_id = e.target_id
      AND o.relation_type = e.relation_type AND o.id <> e.id
      AND (o.derived_scope_id IS NULL OR o.id < e.id));
"""


class Migration(migrations.Migration):
    dependencies = [
        ("rag", "0013_document_graph_indexed_at"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="graphedge",
            name="graph_edge_unique",
        ),
        migrations.AddField(
            model_name="graphedge",
            name="derived_scope_id",
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="graphedge",
            name="derived_space",
            field=models.CharField(
                blank=True, db_default="", default="", editable=False, max_length=40
            ),
        ),
        migrations.AddField(
            model_name="graphnode",
            name="derived_scope_id",
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="graphnode",
            name="derived_space",
            field=models.CharField(
                blank=True, db_default="", default="", editable=False, max_length=40
            ),
        ),
        migrations.RunSQL(_BACKFILL, reverse_sql=_UNDO),
        migrations.AddConstraint(
            model_name="graphedge",
            constraint=models.UniqueConstraint(
                fields=("source", "target", "relation_type", "derived_space", "derived_scope_id"),
                name="graph_edge_unique",
                nulls_distinct=False,
            ),
        ),
    ]
