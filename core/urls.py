from django.urls import path

from core import apis

urlpatterns = [
    path("me", apis.MeApi.as_view(), name="me"),
    path("agents", apis.AgentListApi.as_view(), name="agent-list"),
    path("agents/<id:agent_id>", apis.AgentDetailApi.as_view(), name="agent-detail"),
    path("keys", apis.ApiKeyListCreateApi.as_view(), name="key-list"),
    path("keys/<str:prefix>/revoke", apis.ApiKeyRevokeApi.as_view(), name="key-revoke"),
]
