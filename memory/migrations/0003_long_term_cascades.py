"""The database cascades of 0002 again: there they ran before the migration's deferred foreign
keys existed, so they changed nothing and deleting an entry (its context, its account) failed on
the postings' foreign key at commit."""

from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_long_term")]

    operations = [
        DatabaseOnDelete("memory_memoryentryposting", "context_id", "CASCADE"),
        DatabaseOnDelete("memory_memoryentryposting", "entry_id", "CASCADE"),
        DatabaseOnDelete("memory_memoryentryterm", "context_id", "CASCADE"),
    ]
