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


LONG_TERM = {
    "memory_contexts_list": ("get", {"200"}),
    "memory_contexts_create": ("post", {"201"}),
    "memory_context_retrieve": ("get", {"200"}),
    "memory_context_update": ("patch", {"200"}),
    "memory_context_delete": ("delete", {"204"}),
    "memory_context_archive": ("post", {"200"}),
    "memory_context_unarchive": ("post", {"200"}),
    "memory_context_grants_list": ("get", {"200"}),
    "memory_context_grant_create": ("post", {"201"}),
    "memory_context_grant_revoke": ("delete", {"204"}),
    "memory_context_snapshots_list": ("get", {"200"}),
    "memory_context_snapshot_create": ("post", {"201"}),
    "memory_snapshot_restore": ("post", {"200"}),
    "memory_context_entries_list": ("get", {"200"}),
    "memory_context_entry_create": ("post", {"201"}),
    "memory_context_entries_batch": ("post", {"201"}),
    "memory_entry_create": ("post", {"201"}),
    "memory_entries_batch": ("post", {"201"}),
    "memory_context_access_log": ("get", {"200"}),
    "memory_entry_retrieve": ("get", {"200"}),
    "memory_entry_update": ("patch", {"200"}),
    "memory_entry_delete": ("delete", {"204"}),
    "memory_entry_versions": ("get", {"200"}),
    "memory_entry_importance": ("post", {"200"}),
    "memory_entry_archive": ("post", {"200"}),
    "memory_entry_unarchive": ("post", {"200"}),
    "memory_long_term_search": ("post", {"200"}),
}


def test_long_term_operations_are_documented() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = {
        operation["operationId"]: (method, path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    }
    for operation_id, (method, statuses) in LONG_TERM.items():
        assert operation_id in found, operation_id
        found_method, path, operation = found[operation_id]
        assert found_method == method and path.startswith("/api/v1/memory/"), operation_id
        assert {s for s in operation["responses"] if s.startswith("2")} == statuses, operation_id
    components = schema["components"]["schemas"]
    entry = components["MemoryEntryOutput"]["properties"]
    assert "embedding" not in entry and {"lineage", "version", "previous_id"} <= set(entry)
    hit = components["LongTermHitOutput"]["properties"]
    assert {"score", "components", "retrieval"} <= set(hit)
    batch = components["MemoryEntryBatchInputRequest"]["properties"]["entries"]
    assert batch["maxItems"] == 500
    # Lists are paginated: a cursor parameter and the envelope.
    listed = found["memory_context_entries_list"][2]
    assert "cursor" in {p["name"] for p in listed["parameters"]}
