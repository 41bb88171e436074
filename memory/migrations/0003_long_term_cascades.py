"""PostgreSQL cascades the long-term index's postings and term statistics (they exist in bulk).

A migration of its own: Django adds the foreign keys of the tables 0002 creates at the end of
that migration, so ``DatabaseOnDelete`` there found no constraint to change and deleting a
context or an entry left orphan postings behind.
"""

from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_long_term")]

    operations = [
        DatabaseOnDelete("memory_memoryentryposting", "context_id", "CASCADE"),
        DatabaseOnDelete("memory_memoryentryposting", "entry_id", "CASCADE"),
        DatabaseOnDelete("memory_memoryentryterm", "context_id", "CASCADE"),
    ]
