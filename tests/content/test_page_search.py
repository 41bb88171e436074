"""Page search (``content.selectors.page_search``): over the pages' graph nodes, and nothing
searched in an account that has no page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from content.models import Page
from content.selectors import page_search
from core.actors import Actor
from rag.graph.services import nodes as graph_services

pytestmark = pytest.mark.django_db


def test_an_account_without_pages_is_answered_by_one_statement(actor: Actor) -> None:
    # Other nodes of the graph are no pages: none is searched through.
    graph_services.node_create(actor=actor, name="Orchard", entity_type="concept")
    with CaptureQueriesContext(connection) as queries:
        assert page_search(actor=actor, query="orchard pruning") == []
    assert len(queries) == 1


def test_a_page_is_found_by_its_title(actor: Actor, make_page: Callable[..., Page]) -> None:
    page = make_page("Orchard pruning", "Prune apple trees in late winter.")
    make_page("Deploy checklist", "Run the migrations first.")
    hits = page_search(actor=actor, query="orchard pruning")
    assert hits and hits[0].page.pk == page.pk
