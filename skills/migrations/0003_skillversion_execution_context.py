"""Each version carries its execution context (the skill's is its primary variant's), so that a
change of it goes live through a reviewer as a change of procedure does. Existing versions take
their skill's."""

from django.db import migrations, models

COPY = """
UPDATE skills_skillversion v SET execution_context = s.execution_context
FROM skills_skill s WHERE s.id = v.skill_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("skills", "0002_index_cascades"),
    ]

    operations = [
        migrations.AddField(
            model_name="skillversion",
            name="execution_context",
            field=models.JSONField(
                blank=True, default=dict, help_text="What running this version needs (JSON)."
            ),
        ),
        migrations.RunSQL(COPY, reverse_sql=migrations.RunSQL.noop),
    ]
