"""Maintenance across stores, mounted at /api/v1/maintenance/ (docs/memory/rot.md, "Rot across
stores")."""

from django.urls import path

from memory.maintenance.apis import rot

urlpatterns = [
    path("rot", rot.RotReportApi.as_view(), name="rot"),
]
