"""The installation-level operators group: its members (and superusers) edit schedules and read
job runs, which span every account (core.actors.INSTALLATION_OPERATORS_GROUP)."""

from django.db import migrations

GROUP = "Installation operators"


def create_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name=GROUP)


def delete_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [("core", "0003_audit_event"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(create_group, delete_group)]
