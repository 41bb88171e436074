"""PostgreSQL cascades the skills' postings and term statistics (they exist in bulk), and an
agent's deletion to the rows that follow it (usage records, profiles, trust, assignments).

A migration of its own: Django adds the foreign keys of the tables 0001 creates at the end of
that migration, so ``DatabaseOnDelete`` there would find no constraint to change.
"""

from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    dependencies = [("skills", "0001_initial")]

    operations = [
        DatabaseOnDelete("skills_skillposting", "scope_id", "CASCADE"),
        DatabaseOnDelete("skills_skillposting", "skill_id", "CASCADE"),
        DatabaseOnDelete("skills_skillterm", "scope_id", "CASCADE"),
        DatabaseOnDelete("skills_skillusage", "agent_id", "CASCADE"),
        DatabaseOnDelete("skills_learningprofile", "agent_id", "CASCADE"),
        DatabaseOnDelete("skills_agenttrust", "agent_id", "CASCADE"),
        DatabaseOnDelete("skills_taskassignment", "agent_id", "CASCADE"),
        DatabaseOnDelete("skills_agentskill", "agent_id", "CASCADE"),
    ]
