from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    # pg_trgm was created here once and nothing used it: fresh installs no longer need it, and
    # databases that have it keep it (dropping an extension is often refused on managed servers).
    operations = [VectorExtension()]
