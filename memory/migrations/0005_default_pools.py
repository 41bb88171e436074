from django.db import migrations


def default_pools(apps, schema_editor):
    """Every account has its default pool from its creation now (memory/account_setup.py);
    accounts made before get theirs here (it was made on first use)."""
    Account = apps.get_model("core", "Account")
    MemoryPool = apps.get_model("memory", "MemoryPool")
    have = set(MemoryPool.objects.filter(pool_id="default").values_list("account_id", flat=True))
    MemoryPool.objects.bulk_create(
        [
            MemoryPool(
                account_id=account_id,
                pool_id="default",
                name="Default",
                pool_type="shared",
                scope="persistent",
                public_read=True,
            )
            for account_id in Account.objects.values_list("pk", flat=True)
            if account_id not in have
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_agent_memory_flag")]

    operations = [migrations.RunPython(default_pools, migrations.RunPython.noop)]
