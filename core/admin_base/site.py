"""Engram's admin site: the home page by role (``core.admin_base.home``) and the model list
grouped by the tasks people do, under names a newcomer understands (docs/admin.md).

It replaces Django's default site (``core.apps.EngramAdminConfig``), so every app registers with
``admin.site`` as usual. Each registered model belongs to one group of ``GROUPS``; a test fails
when one does not. An app's own index page (``/admin/memory/``) keeps Django's list.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse

# (group, what it is for, [(app_label.model_name, the name shown)]), in the order shown.
GROUPS: list[tuple[str, str, list[tuple[str, str]]]] = [
    (
        "Review",
        "Decisions waiting for a person.",
        [
            ("memory.pendingchange", "Memory changes to review"),
            ("skills.skillproposal", "Skill proposals"),
            ("skills.skillconflict", "Skill conflicts"),
        ],
    ),
    (
        "Agents' memory",
        "What agents remember, from their conversations and their own writes.",
        [
            ("memory.conversation", "Conversations"),
            ("memory.extraction", "Facts extracted from conversations"),
            ("memory.memorycontext", "Long-term memory: contexts"),
            ("memory.memoryentry", "Long-term memories"),
            ("memory.memorysnapshot", "Long-term memory: snapshots"),
            ("memory.memoryaccesslog", "Long-term memory: access log"),
            ("memory.shorttermentry", "Short-term memories"),
            ("memory.memorypool", "Shared memory pools"),
            ("memory.memorypoolevent", "Shared memory pools: events"),
            ("memory.knowledgestore", "Knowledge item stores"),
            ("memory.knowledgeitem", "Knowledge items"),
        ],
    ),
    (
        "Documents and search",
        "Uploaded documents, searched by meaning and by words.",
        [
            ("rag.knowledgebase", "Document collections"),
            ("rag.document", "Documents"),
            ("rag.chunk", "Document passages (chunks)"),
            ("rag.searchquery", "Searches made"),
        ],
    ),
    (
        "Knowledge graph",
        "People, places and things named in memories, documents, pages and skills.",
        [
            ("rag.graphnode", "Graph nodes"),
            ("rag.graphedge", "Graph edges"),
            ("rag.graphcommunity", "Graph communities"),
        ],
    ),
    (
        "Wiki",
        "Pages and articles people write, linked with [[wikilinks]].",
        [("content.page", "Pages"), ("content.article", "Articles")],
    ),
    (
        "Skills",
        "What agents know how to do, how well it works, and who does it best.",
        [
            ("skills.skill", "Skills"),
            ("skills.skillversion", "Skill versions"),
            ("skills.skillusage", "Skill usage"),
            ("skills.taskassignment", "Task assignments"),
            ("skills.learningprofile", "Agents' learning profiles"),
            ("skills.agenttrust", "Agent trust"),
        ],
    ),
    (
        "Agents and access",
        "Accounts, the agents acting in them, their keys and teams, and the audit log.",
        [
            ("core.account", "Accounts"),
            ("core.agent", "Agents"),
            ("core.apikey", "API keys"),
            ("core.team", "Teams"),
            ("core.auditevent", "Audit log"),
        ],
    ),
    (
        "Maintenance and schedules",
        "Background jobs, when they run, and what they did.",
        [
            ("django_celery_beat.periodictask", "Schedules"),
            ("core.jobrun", "Job runs"),
            ("core.portabilityjob", "Account exports and imports"),
            ("core.embeddinggeneration", "Embedding model generations"),
            ("memory.maintenancejob", "Memory maintenance jobs"),
            ("memory.memorymaintenancereport", "Memory maintenance reports"),
            ("django_celery_beat.intervalschedule", "Schedules: intervals"),
            ("django_celery_beat.crontabschedule", "Schedules: times of day (crontab)"),
            ("django_celery_beat.clockedschedule", "Schedules: one-off times"),
            ("django_celery_beat.solarschedule", "Schedules: sunrise and sunset"),
        ],
    ),
    (
        "People and sign-in",
        "Who may sign in to this admin, and the record of sign-in attempts.",
        [
            ("auth.user", "People"),
            ("auth.group", "Groups of people"),
            ("axes.accessattempt", "Sign-in attempts (locked out)"),
            ("axes.accessfailurelog", "Failed sign-ins"),
            ("axes.accesslog", "Sign-in log"),
        ],
    ),
]


def model_key(model: Any) -> str:
    return f"{model._meta.app_label}.{model._meta.model_name}"


class EngramAdminSite(admin.AdminSite):
    site_header = "Engram"
    site_title = "Engram admin"
    index_title = "Engram administration"
    index_template = "admin/engram_index.html"
    # No model list beside every page: the home lists them, and the lists people work through
    # (proposals, memory changes) get the width instead (no sideways scrolling at 1,280 pixels).
    enable_nav_sidebar = False

    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        apps = super().get_app_list(request, app_label)
        if app_label is not None:
            return apps
        available = {model_key(m["model"]): m for app in apps for m in app["models"]}
        grouped: list[dict[str, Any]] = []
        placed: set[str] = set()
        for number, (name, purpose, members) in enumerate(GROUPS, start=1):
            models = []
            for key, label in members:
                if key in available:
                    models.append({**available[key], "name": label})
                    placed.add(key)
            if models:
                grouped.append(
                    {
                        "name": name,
                        "purpose": purpose,
                        "app_label": f"group-{number}",
                        "app_url": "",
                        "has_module_perms": True,
                        "models": models,
                    }
                )
        rest = [m for key, m in available.items() if key not in placed]
        if rest:  # a model no group names yet (tests/core/test_admin_home.py fails on it)
            grouped.append(
                {
                    "name": "Other",
                    "purpose": "",
                    "app_label": "group-other",
                    "app_url": "",
                    "has_module_perms": True,
                    "models": sorted(rest, key=lambda m: m["name"]),
                }
            )
        return grouped

    def index(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        from core.admin_base.home import homes_for

        return super().index(request, {"homes": homes_for(request), **(extra_context or {})})
