"""Cluster maintenance as the MCP tool ``memory_maintenance`` (docs/mcp.md), thin over the same
service as ``POST /api/v1/memory/maintenance`` (the service decides which contexts a key may
maintain)."""

from __future__ import annotations

from typing import Any

from core.mcp import Call, Tool
from memory.apis.maintenance_reports import MaintenanceRunApi, ReportOutput
from memory.models import MemoryMaintenanceReport
from memory.services import cluster_maintenance


def _run(call: Call) -> dict[str, Any]:
    report = cluster_maintenance.memory_maintenance_request(
        actor=call.actor,
        trigger=MemoryMaintenanceReport.Trigger.MCP,
        dry_run=call.data["dry_run"],
        context_ids=call.data.get("context_ids"),
    )
    return dict(ReportOutput(report).data)


def _summary(out: Any) -> str:
    kind = "Dry run" if out["dry_run"] else "Run"
    return (
        f"{kind} {out['id']}: {out['cluster_count']} clusters; kept {out['kept_count']} "
        f"memories absorbing {out['replaced_count']}; skipped {out['skipped_count']}."
    )


TOOLS = (
    Tool(
        name="memory_maintenance",
        title="Merge near-duplicate memories",
        description=(
            "Cluster long-term memories (those of `context_ids`, or every context: of the "
            "account with an admin key, that you may write otherwise) and rewrite each group "
            "of near-duplicates into one: the most central memory is kept with the others' "
            "tags and metadata, the others are archived (still readable as versions). "
            "`dry_run` plans without changing anything. Answers the maintenance report."
        ),
        scope="write",
        input=MaintenanceRunApi.InputSerializer,
        output=ReportOutput,
        run=_run,
        summary=_summary,
    ),
)
