"""PostgreSQL cascades the short-term and pool indexes (they exist in bulk), then the indexes are
built for the entries and pools written before them (a migration of its own for the same reason
as 0003: Django adds 0006's foreign keys at its end)."""

from django.db import migrations

from core.db import DatabaseOnDelete


def build_indexes(apps, schema_editor):
    # The current code builds them: these tables are the latest state of the schema here.
    from memory.tier_index import rebuild_pool_index, rebuild_short_term_index

    ShortTermEntry = apps.get_model("memory", "ShortTermEntry")
    MemoryPool = apps.get_model("memory", "MemoryPool")
    for agent_id in ShortTermEntry.objects.values_list("agent_id", flat=True).distinct():
        rebuild_short_term_index(agent_id=agent_id)
    for account_id in MemoryPool.objects.values_list("account_id", flat=True).distinct():
        rebuild_pool_index(account_id=account_id)


class Migration(migrations.Migration):
    dependencies = [("memory", "0006_tier_indexes")]

    operations = [
        DatabaseOnDelete("memory_shorttermposting", "agent_id", "CASCADE"),
        DatabaseOnDelete("memory_shorttermposting", "entry_id", "CASCADE"),
        DatabaseOnDelete("memory_shorttermterm", "agent_id", "CASCADE"),
        DatabaseOnDelete("memory_poolleaf", "account_id", "CASCADE"),
        DatabaseOnDelete("memory_poolleaf", "pool_id", "CASCADE"),
        DatabaseOnDelete("memory_poolleafposting", "account_id", "CASCADE"),
        DatabaseOnDelete("memory_poolleafposting", "leaf_id", "CASCADE"),
        DatabaseOnDelete("memory_poolleafposting", "pool_id", "CASCADE"),
        DatabaseOnDelete("memory_poolleafterm", "account_id", "CASCADE"),
        migrations.RunPython(build_indexes, migrations.RunPython.noop),
    ]
