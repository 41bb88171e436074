from django.urls import path

from core import apis
from core.embeddings import apis as embeddings
from core.portability import apis as portability

urlpatterns = [
    path("me", apis.MeApi.as_view(), name="me"),
    path("agents", apis.AgentListApi.as_view(), name="agent-list"),
    path("agents/<id:agent_id>", apis.AgentDetailApi.as_view(), name="agent-detail"),
    path("keys", apis.ApiKeyListCreateApi.as_view(), name="key-list"),
    path("keys/<key_prefix:prefix>/revoke", apis.ApiKeyRevokeApi.as_view(), name="key-revoke"),
    # Export and import of the caller's account (docs/portability.md, "Over the API").
    path("export", portability.ExportApi.as_view(), name="export"),
    path("export/<id:job_id>", portability.ExportJobApi.as_view(), name="export-job"),
    path(
        "export/<id:job_id>/download",
        portability.ExportDownloadApi.as_view(),
        name="export-download",
    ),
    path("import", portability.ImportApi.as_view(), name="import"),
    path("import/<id:job_id>", portability.ImportJobApi.as_view(), name="import-job"),
    # Embedding-model migration (docs/portability.md, "Changing the embedding model").
    path("embeddings", embeddings.EmbeddingsStatusApi.as_view(), name="embeddings"),
    path("embeddings/start", embeddings.EmbeddingsStartApi.as_view(), name="embeddings-start"),
    path(
        "embeddings/cutover", embeddings.EmbeddingsCutoverApi.as_view(), name="embeddings-cutover"
    ),
    path(
        "embeddings/rollback",
        embeddings.EmbeddingsRollbackApi.as_view(),
        name="embeddings-rollback",
    ),
    path("embeddings/drop", embeddings.EmbeddingsDropApi.as_view(), name="embeddings-drop"),
]
