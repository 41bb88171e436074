"""PostgreSQL cascades the knowledge items' index (it exists in bulk): a migration of its own
because Django adds 0009's foreign keys at its end (as 0003 and 0007 do)."""

from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    dependencies = [("memory", "0010_knowledge_items")]

    operations = [
        DatabaseOnDelete("memory_knowledgeitemposting", "store_id", "CASCADE"),
        DatabaseOnDelete("memory_knowledgeitemposting", "item_id", "CASCADE"),
        DatabaseOnDelete("memory_knowledgeitemterm", "store_id", "CASCADE"),
    ]
