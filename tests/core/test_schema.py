from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.core.management import call_command


@pytest.mark.django_db
def test_openapi_schema_is_valid_without_warnings(tmp_path: Path) -> None:
    target = tmp_path / "schema.yaml"
    # --fail-on-warn: a colliding component name or an unresolvable view fails the build.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    assert schema["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
    paths = set(schema["paths"])
    assert {"/api/v1/me", "/api/v1/keys", "/api/v1/rag/search", "/api/v1/rag/query"} <= paths
    assert "/api/v1/rag/knowledge-bases/{kb_id}/documents" in paths
