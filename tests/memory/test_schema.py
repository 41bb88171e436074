"""The schema documents the statuses the memory operations answer with (schemathesis checks
the live server against it; these are the ones a default would get wrong)."""

from __future__ import annotations

from drf_spectacular.generators import SchemaGenerator


def test_memory_operations_document_their_success_statuses() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = {
        operation["operationId"]: operation
        for item in schema["paths"].values()
        for operation in item.values()
    }
    expected = {
        "memory_short_term_put": {"200", "201"},
        "memory_pool_data_delete": {"200"},
        "memory_working_clear": {"200"},
        "memory_working_remove": {"204"},
        "memory_pools_create": {"201"},
        "memory_working_persist": {"200"},
    }
    for operation_id, statuses in expected.items():
        responses = operations[operation_id]["responses"]
        assert {s for s in responses if s.startswith("2")} == statuses, operation_id
    working = [op for op_id, op in operations.items() if op_id.startswith("memory_working_")]
    assert all("memory_unavailable" in op["responses"]["503"]["description"] for op in working)
    assert "requestBody" not in operations["memory_workflow_run_expire"]
