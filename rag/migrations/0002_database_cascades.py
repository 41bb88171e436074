from django.db import migrations

from core.db import DatabaseOnDelete


class Migration(migrations.Migration):
    dependencies = [("rag", "0001_initial")]

    operations = [
        DatabaseOnDelete("rag_chunk", "account_id", "CASCADE"),
        DatabaseOnDelete("rag_chunk", "knowledge_base_id", "CASCADE"),
        DatabaseOnDelete("rag_chunk", "document_id", "CASCADE"),
        DatabaseOnDelete("rag_keywordposting", "knowledge_base_id", "CASCADE"),
        DatabaseOnDelete("rag_keywordposting", "chunk_id", "CASCADE"),
        DatabaseOnDelete("rag_keywordposting", "document_id", "CASCADE"),
        DatabaseOnDelete("rag_keywordterm", "knowledge_base_id", "CASCADE"),
        DatabaseOnDelete("rag_searchresult", "chunk_id", "SET NULL"),
        DatabaseOnDelete("rag_searchresult", "document_id", "SET NULL"),
    ]
