"""A person in a real browser opens a page's graph (Cytoscape.js, vendored, drawn from the
admin's JSON view), sees the nodes coloured by type and the edges by relation, and follows a
node with a click on the canvas to that node's own admin page."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from content import services as content_services
from core import services
from core.actors import actor_for_agent
from rag.graph.services import nodes as graph_services
from tests.e2e.admin_browser import AdminBrowser, screenshot
from tests.factories import AccountFactory, AgentFactory, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def test_a_pages_graph_is_drawn_and_a_click_follows_a_node(
    admin: AdminBrowser, browser: Any
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    orchard = AccountFactory.create(name="Orchard", slug="orchard")
    writer = actor_for_agent(AgentFactory.create(account=orchard, name="scribe"))
    target = content_services.page_create(
        actor=writer, title="Harbour Notes", content="Tides and moorings."
    )
    ferry = content_services.page_create(
        actor=writer, title="Ferry Times", content="Boats leave from [[Harbour Notes]]."
    )
    target.refresh_from_db()
    person = graph_services.node_create(
        actor=writer, account_id=orchard.pk, name="Ada Pilot", entity_type="person"
    )
    graph_services.edge_create(
        actor=writer,
        account_id=orchard.pk,
        source_id=person.pk,
        target_id=target.node_id or 0,
        relation_type="wrote",
    )
    services.membership_grant(
        account=orchard, user=UserFactory.create(username="ada", is_staff=True), role="author"
    )
    wait = WebDriverWait(browser, 60)

    admin.go(reverse("admin:login"))
    assert "Django" not in browser.title and "Engram" in browser.title
    admin.sign_in("ada", PASSWORD)

    # The page's form links to its graph.
    admin.go(reverse("admin:content_page_change", args=[target.pk]))
    admin.submit(browser.find_element(By.ID, "page-graph"))
    assert browser.title.startswith("Graph of “Harbour Notes”"), browser.title
    wait.until(
        lambda b: b.find_element(By.ID, "graph-canvas").get_attribute("data-ready") == "true"
    )
    status = browser.find_element(By.ID, "graph-status").text
    assert status.startswith("3 nodes, 2 edges"), status

    # Drawn: every node with its type's colour, every edge with its relation's.
    drawn = browser.execute_script(
        "const cy = window.engramGraph;"
        "return {nodes: cy.nodes().map(n => [n.data('label'), n.data('type'),"
        " n.style('background-color')]),"
        " edges: cy.edges().map(e => [e.data('label'), e.style('line-color')])};"
    )
    types = {label: kind for label, kind, _ in drawn["nodes"]}
    assert types == {"Harbour Notes": "page", "Ferry Times": "page", "Ada Pilot": "person"}
    colours = {kind: colour for _, kind, colour in drawn["nodes"]}
    assert colours["page"] != colours["person"]
    edge_colours = dict(drawn["edges"])
    assert set(edge_colours) == {"references", "wrote"}
    assert edge_colours["references"] != edge_colours["wrote"]
    legend = browser.find_element(By.ID, "graph-node-legend").text
    assert "page" in legend and "person" in legend
    assert "wrote" in browser.find_element(By.ID, "graph-edge-legend").text

    # Readable: no relation name drawn across the nodes until the pointer asks for it, then
    # horizontal; no node's label box overlaps another's; the zoom buttons zoom.
    labels = browser.execute_script(
        "const cy = window.engramGraph; const e = cy.edges()[0];"
        "const before = e.style('label'); e.emit('mouseover');"
        "const after = [e.style('label'), e.style('text-rotation')]; e.emit('mouseout');"
        "return [before, after];"
    )
    assert labels[0] == "" and labels[1][0] in {"references", "wrote"}, labels
    assert labels[1][1] in ("none", "0rad", "0deg"), labels
    boxes = browser.execute_script(
        "return window.engramGraph.nodes().map(n => n.renderedBoundingBox({includeLabels: true}));"
    )
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x2"] <= b["x1"] or b["x2"] <= a["x1"] or a["y2"] <= b["y1"] or b["y2"] <= a["y1"]
            )
            assert apart, (a, b)
    zoom = browser.execute_script("return window.engramGraph.zoom();")
    browser.find_element(By.CSS_SELECTOR, "#graph-zoom [data-zoom=in]").click()
    assert browser.execute_script("return window.engramGraph.zoom();") > zoom
    browser.find_element(By.CSS_SELECTOR, "#graph-zoom [data-zoom=fit]").click()
    screenshot(browser, "admin-graph")

    # A click on "Ferry Times" where it is drawn opens that page's admin page.
    x, y = browser.execute_script(
        "const n = window.engramGraph.nodes().filter(n => n.data('label') === 'Ferry Times');"
        "const p = n.renderedPosition(); return [p.x, p.y];"
    )
    canvas = browser.find_element(By.ID, "graph-canvas")
    size = canvas.size
    admin.navigate_by(
        ActionChains(browser)
        .move_to_element_with_offset(
            canvas, int(x - size["width"] / 2), int(y - size["height"] / 2)
        )
        .click()
        .perform
    )
    assert browser.current_url.endswith(reverse("admin:content_page_change", args=[ferry.pk])), (
        browser.current_url
    )
    assert "Ferry Times" in browser.find_element(By.ID, "id_title").get_attribute("value")
