from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    """0004 recreated the chunk -> document foreign key without its database cascade (0002).

    A migration of its own: Django creates altered foreign keys at the end of a migration.
    """

    dependencies = [("rag", "0004_lean_ingestion_indexes")]

    operations = [DatabaseOnDelete("rag_chunk", "document_id", "CASCADE")]
