"""Room on each page of long-term entries for an updated version of a row.

Every search records its hits as reads (``access_count``, ``last_accessed_at``), so entries are
updated far more often than written. On full pages such an update cannot stay on its page and
becomes a new tuple in every index, the HNSW index included: 11 ms for the ten hits of one
search at 100k entries. With free space on the page PostgreSQL updates in place (a HOT update,
no indexed column changes): 0.1 ms (docs/benchmarks.md, "Search across tiers at scale").

The setting applies to pages written from now on; ``VACUUM FULL memory_memoryentry`` (which
locks the table while it rewrites it) applies it to an existing table (docs/deployment.md, "Upgrading").
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory", "0014_maintenance_reports")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memory_memoryentry SET (fillfactor = 80)",
            reverse_sql="ALTER TABLE memory_memoryentry RESET (fillfactor)",
        ),
    ]
