from django.contrib import admin
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from core import health
from core.converters import ApiKeyPrefixConverter, IdConverter
from core.mcp.endpoint import mcp_endpoint
from core.metrics_scrape import metrics_view
from core.views import landing

register_converter(IdConverter, "id")
register_converter(ApiKeyPrefixConverter, "key_prefix")

handler404 = "core.errors.json_404"
handler500 = "core.errors.json_500"

api_v1 = [
    path("", include(("core.urls", "core"), namespace="core")),
    path("rag/", include(("rag.urls", "rag"), namespace="rag")),
    path("memory/", include(("memory.urls", "memory"), namespace="memory")),
    path("knowledge/", include(("memory.knowledge.urls", "knowledge"), namespace="knowledge")),
    path(
        "maintenance/",
        include(("memory.maintenance.urls", "maintenance"), namespace="maintenance"),
    ),
    path("graph/", include(("rag.graph.urls", "graph"), namespace="graph")),
    path("content/", include(("content.urls", "content"), namespace="content")),
    path("", include(("skills.urls", "skills"), namespace="skills")),
]

urlpatterns = [
    path("", landing, name="landing"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include((api_v1, "v1"), namespace="v1")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("mcp/", mcp_endpoint),  # clients configured with the trailing slash
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("admin/", admin.site.urls),
]
