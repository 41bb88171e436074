"""Pages in the knowledge graph on the real PostgreSQL: resolution, link sync, backlinks,
unlinked mentions, related pages, broken links and renames."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from content import selectors, services
from content.models import Page
from core.actors import Actor, actor_for_agent
from core.errors import Conflict, PayloadTooLarge, ValidationFailed
from core.models import AuditEvent
from rag.graph import selectors as graph
from rag.models import GraphEdge, GraphNode
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

MakePage = Callable[..., Page]


def edges_from(page: Page) -> dict[str, dict[str, Any]]:
    page.refresh_from_db()
    return {
        edge.target.name: edge.metadata
        for edge in GraphEdge.objects.filter(
            source_id=page.node_id, relation_type="references"
        ).select_related("target")
    }


def titles(items: list[selectors.LinkedItem]) -> list[str]:
    return [item.title for item in items]


def test_saving_a_page_makes_its_node_and_its_references_edges(make_page: MakePage) -> None:
    target = make_page("Feature Guide", "How we build features.")
    source = make_page("Roadmap", "Read [[feature guide|the guide]] first. Also [[Nowhere]].")
    assert target.node is not None and source.node is not None
    node = target.node
    assert (node.entity_type, node.node_type, node.name) == ("page", "entity", "Feature Guide")
    assert node.metadata == {
        "content_type": "page",
        "content_id": target.pk,
        "slug": "feature-guide",
    }
    assert edges_from(source) == {
        "Feature Guide": {
            "link_text": "[[feature guide|the guide]]",
            "display_text": "the guide",
            "content_type": "page",
            "content_id": target.pk,
            "count": 1,
        }
    }
    assert titles(selectors.broken_links(page=source)) == ["Nowhere"]
    assert selectors.broken_links(page=source)[0].link_text == "[[Nowhere]]"


def test_resolution_order_title_alias_slug_then_article(
    make_page: MakePage, make_article: Callable[..., Any], actor: Actor
) -> None:
    by_title = make_page("Deploy")
    by_alias = make_page("Release Process", aliases=["Shipping"])
    make_article("Shipping", "An article that a page alias shadows.")
    article = make_article("Runbook", "Global runbook.")
    make_page("Deploy Notes")  # slug deploy-notes
    found = selectors.resolve(
        account_id=actor.account_id,
        targets=["DEPLOY", "shipping", "deploy-notes", "Deploy  Notes!", "runbook", "missing"],
    )
    assert found["DEPLOY"].page == by_title
    assert found["shipping"].page == by_alias
    assert (
        found["deploy-notes"].page is not None
        and found["deploy-notes"].page.title == "Deploy Notes"
    )
    assert found["Deploy  Notes!"].page == found["deploy-notes"].page
    assert found["runbook"].kind == "article" and found["runbook"].article == article
    assert "missing" not in found


def test_resolution_prefers_a_title_to_an_alias_and_the_oldest_of_several(
    make_page: MakePage,
    make_article: Callable[..., Any],
    actor: Actor,
    django_assert_max_num_queries: Any,
) -> None:
    older = make_page("Blue Notes", aliases=["Azure", "Sky"])
    make_page("Green Notes", aliases=["Azure"])
    titled = make_page("Sky")  # a title beats an older page's alias
    make_article("Cobalt", "An article.", aliases=["Indigo"])
    with django_assert_max_num_queries(2):  # pages, then articles: nothing loaded per link
        found = selectors.resolve(
            account_id=actor.account_id, targets=["azure", "SKY", "indigo", "blue-notes"]
        )
        assert found["indigo"].article is not None and found["indigo"].article.aliases == ["Indigo"]
    assert found["azure"].page == older and found["blue-notes"].page == older
    assert found["SKY"].page == titled


def test_a_link_to_another_accounts_page_never_resolves(
    make_page: MakePage, other_agent_client: AuthedAgent, synced: Callable[..., Any]
) -> None:
    intruder = actor_for_agent(other_agent_client.agent)
    synced(services.page_create, actor=intruder, title="Secret Plan", content="hidden")
    mine = make_page("Mine", "Linking [[Secret Plan]].")
    assert edges_from(mine) == {}
    assert titles(selectors.broken_links(page=mine)) == ["Secret Plan"]


def test_re_extraction_is_idempotent_and_follows_edits(
    make_page: MakePage, actor: Actor, synced: Callable[..., Any]
) -> None:
    a, b = make_page("Alpha"), make_page("Beta")
    source = make_page("Source", "[[Alpha]] [[Alpha|again]] [[Beta]]")
    syncs = AuditEvent.objects.filter(action="rag.graph.edges.sync")
    before = syncs.count()
    with CaptureQueriesContext(connection) as queries:
        report = services.links_extract(actor=actor, page=source)
    assert (report.links, report.resolved, report.created, report.removed) == (3, 2, 0, 0)
    assert syncs.count() == before  # unchanged links: nothing written, no row locked
    assert not [q for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]
    assert edges_from(source)["Alpha"]["count"] == 2
    synced(services.page_update, actor=actor, page=source, fields={"content": "[[Beta]] only"})
    assert set(edges_from(source)) == {"Beta"}
    assert [p.pk for p in selectors.backlinks(page=a)] == []
    assert [p.pk for p in selectors.backlinks(page=b)] == [source.pk]


def test_self_links_make_no_edge(make_page: MakePage) -> None:
    page = make_page("Loop", "I am [[Loop]].")
    assert edges_from(page) == {}
    assert selectors.broken_links(page=page) == []


def test_a_new_page_resolves_links_written_before_it_existed(make_page: MakePage) -> None:
    early = make_page("Early", "Soon there will be [[Later Page]].")
    assert edges_from(early) == {}
    later = make_page("Later Page")
    assert set(edges_from(early)) == {"Later Page"}
    assert [p.pk for p in selectors.backlinks(page=later)] == [early.pk]


def test_deleting_a_page_removes_its_node_and_edges(
    make_page: MakePage, actor: Actor, synced: Callable[..., Any]
) -> None:
    target = make_page("Doomed")
    source = make_page("Source", "[[Doomed]]")
    node_id = target.node_id
    assert node_id is not None
    synced(services.page_delete, actor=actor, page=target)
    assert not GraphNode.objects.filter(pk=node_id).exists()
    assert edges_from(source) == {}
    assert titles(selectors.broken_links(page=source)) == ["Doomed"]


def test_unlinked_mentions_are_whole_words_any_case_not_linking_newest_first(
    make_page: MakePage,
) -> None:
    target = make_page("Vector Search", aliases=["ANN"])
    older = make_page("Older", "we rely on vector   SEARCH daily")
    newer = make_page("Newer", "An ann index helps.")
    make_page("Linked", "vector search, see [[Vector Search]]")
    make_page("Partial", "vectors searching and banner")
    make_page("Glued", "xvector search")
    found = selectors.unlinked_mentions(page=target)
    assert [item.id for item in found] == [newer.pk, older.pk]
    assert "ann index" in found[0].excerpt.lower()


def test_unlinked_mentions_skip_pages_with_the_words_but_not_the_name(
    make_page: MakePage,
) -> None:
    # The words index finds every page holding the words; only whole-name matches count, and
    # the limit is filled from older pages when the newest candidates are not mentions.
    target = make_page("Search Engine", aliases=["SE"])
    first = make_page("First", "Our search engine, the SE, is fast.")
    second = make_page("Second", "A SEARCH\nengine again.")
    make_page("Third", "The engine of search.")
    make_page("Fourth", "Search. Engine.")
    make_page("Fifth", "search-engines and engine search")
    make_page("Sixth", "Linked: [[Search Engine]] and search engine.")
    found = selectors.unlinked_mentions(page=target, limit=2)
    assert [item.id for item in found] == [second.pk, first.pk]
    assert [item.id for item in selectors.unlinked_mentions(page=target, limit=1)] == [second.pk]


def test_the_stored_words_follow_edits_and_are_never_loaded(
    make_page: MakePage, actor: Actor, synced: Callable[..., Any]
) -> None:
    target = make_page("Tide Tables")
    other = make_page("Harbour", "Nothing yet.")
    assert selectors.unlinked_mentions(page=target) == []
    synced(services.page_update, actor=actor, page=other, fields={"content": "See tide tables."})
    assert [item.id for item in selectors.unlinked_mentions(page=target)] == [other.pk]
    assert '"words"' not in str(Page.objects.all().query)  # search data stays in the database


def test_unlinked_mentions_stay_in_the_account(
    make_page: MakePage, other_agent_client: AuthedAgent, synced: Callable[..., Any]
) -> None:
    intruder = actor_for_agent(other_agent_client.agent)
    synced(services.page_create, actor=intruder, title="Their Page", content="Mentions Target")
    target = make_page("Target")
    assert selectors.unlinked_mentions(page=target) == []


@pytest.mark.real_embeddings  # related by meaning
def test_related_pages_by_embedding_similarity(make_page: MakePage, make_article: Any) -> None:
    base = make_page("Kubernetes deploys", "Deploying containers to a kubernetes cluster.")
    near = make_page("Helm charts", "Packaging kubernetes deployments with helm charts.")
    make_page("Sourdough", "Bread baking with a sourdough starter and flour.")
    article = make_article("Cluster upgrades", "Upgrading a kubernetes cluster safely.")
    found = selectors.related(page=Page.objects.get(pk=base.pk), limit=3)
    assert len(found) == 3
    assert {found[0].id, found[1].id} == {near.pk, article.pk}
    assert found[-1].title == "Sourdough"
    assert all(0 <= item.similarity <= 1 for item in found)  # type: ignore[operator]
    assert found[0].similarity >= found[1].similarity >= found[2].similarity  # type: ignore[operator]


def test_the_embedding_follows_the_text(
    make_page: MakePage, actor: Actor, synced: Callable[..., Any]
) -> None:
    page = make_page("Notes", "first text")
    before = Page.objects.get(pk=page.pk)
    assert before.embedding is not None and before.embedding_model
    synced(services.page_update, actor=actor, page=page, fields={"status": "published"})
    assert Page.objects.get(pk=page.pk).embedded_checksum == before.embedded_checksum
    synced(services.page_update, actor=actor, page=page, fields={"content": "other text"})
    after = Page.objects.get(pk=page.pk)
    assert after.embedded_checksum != before.embedded_checksum
    assert after.embedding is not None and before.embedding is not None
    assert list(after.embedding) != list(before.embedding)


def test_rename_rewrites_links_in_one_transaction(
    make_page: MakePage, actor: Actor, synced: Callable[..., Any]
) -> None:
    target = make_page("Old Title", "Self: [[Old Title#Top]]")
    a = make_page("A", "See [[old title]] and [[Old Title|the doc]] and `[[Old Title]]`.")
    b = make_page("B", "Slug link [[old-title]]; other [[A]].")
    untouched = make_page("C", "Nothing here.")
    result = synced(
        services.page_rename, actor=actor, page=target, title="New Title", rewrite_links=True
    )
    assert (result.old_title, result.new_title, result.links_rewritten) == (
        "Old Title",
        "New Title",
        4,
    )
    assert {r.page.pk: r.links for r in result.rewritten} == {target.pk: 1, a.pk: 2, b.pk: 1}
    assert Page.objects.get(pk=a.pk).content == (
        "See [[New Title]] and [[New Title|the doc]] and `[[Old Title]]`."
    )
    assert Page.objects.get(pk=b.pk).content == "Slug link [[New Title]]; other [[A]]."
    assert Page.objects.get(pk=target.pk).content == "Self: [[New Title#Top]]"
    assert Page.objects.get(pk=untouched.pk).content == "Nothing here."
    renamed = Page.objects.get(pk=target.pk)
    assert (renamed.slug, renamed.node.name) == ("new-title", "New Title")  # type: ignore[union-attr]
    assert {p.pk for p in selectors.backlinks(page=renamed)} == {a.pk, b.pk}


def test_rename_without_rewrite_breaks_the_old_links(
    make_page: MakePage, actor: Actor, synced: Callable[..., Any]
) -> None:
    target = make_page("First Name")
    source = make_page("Source", "[[First Name]]")
    synced(services.page_rename, actor=actor, page=target, title="Second", rewrite_links=False)
    assert Page.objects.get(pk=source.pk).content == "[[First Name]]"
    assert edges_from(source) == {}
    assert titles(selectors.broken_links(page=Page.objects.get(pk=source.pk))) == ["First Name"]


def test_a_rename_onto_a_taken_title_changes_nothing(make_page: MakePage, actor: Actor) -> None:
    a = make_page("Alpha", "[[Beta]]")
    make_page("Beta", "[[Alpha]]")
    with pytest.raises(Conflict) as taken:
        services.page_rename(actor=actor, page=a, title="beta", rewrite_links=True)
    assert taken.value.code == "slug_taken"
    assert Page.objects.get(pk=a.pk).title == "Alpha"
    assert Page.objects.get(title="Beta").content == "[[Alpha]]"
    with pytest.raises(ValidationFailed) as same:
        services.page_rename(actor=actor, page=a, title="Alpha")
    assert same.value.code == "title_unchanged"


def test_bad_pages_are_refused(make_page: MakePage, actor: Actor) -> None:
    make_page("Taken")
    with pytest.raises(Conflict) as taken:
        services.page_create(actor=actor, title="taken!")
    assert taken.value.code == "slug_taken"
    for title, code in (
        ("   ", "empty_title"),
        ("!!!", "invalid_title"),
        ("a[[b", "invalid_title"),
    ):
        with pytest.raises(ValidationFailed) as bad:
            services.page_create(actor=actor, title=title)
        assert bad.value.code == code
    with pytest.raises(PayloadTooLarge) as huge:
        services.page_create(actor=actor, title="Huge", content="x" * 100_001)
    assert huge.value.code == "content_too_long"
    assert Page.objects.count() == 1


def test_neighbours_reach_pages_through_references(make_page: MakePage) -> None:
    make_page("C")
    make_page("B", "[[C]]")
    start = make_page("A", "[[B]]").node
    assert start is not None
    found = graph.neighbours(node=start, hops=2, relation_types=[graph.REFERENCES])
    assert [(n.node.name, n.hops) for n in found] == [("B", 1), ("C", 2)]


def test_a_pages_neighbours_include_the_pages_linking_to_it(
    make_page: MakePage, agent_client: AuthedAgent
) -> None:
    """Page A links to page B: B's neighbours hold A by default (``both``) and ``in``, not
    ``out``; a path from B to A follows the link backwards unless ``direction=out``."""
    b = make_page("B")
    a = make_page("A", "See [[B]].")
    client = agent_client.client
    url = f"/api/v1/graph/nodes/{b.node_id}/neighbors"

    def neighbours(node_url: str = url, **params: str) -> list[tuple[str, str]]:
        response = client.get(node_url, params)
        assert response.status_code == 200, response.json()
        return [(r["node"]["name"], r["relation_type"]) for r in response.json()["results"]]

    assert neighbours() == [("A", "references")]
    assert neighbours(direction="both") == [("A", "references")]
    assert neighbours(direction="out") == []
    assert neighbours(direction="in") == [("A", "references")]
    a_url = f"/api/v1/graph/nodes/{a.node_id}/neighbors"
    assert neighbours(a_url) == neighbours(a_url, direction="out") == [("B", "references")]
    assert neighbours(a_url, direction="in") == []
    bad = client.get(url, {"direction": "sideways"})
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "validation_error"
    assert "sideways" in bad.json()["error"]["details"]["direction"][0]

    forwards = {"from": str(b.node_id), "to": str(a.node_id)}
    path = client.get("/api/v1/graph/path", forwards)
    assert path.status_code == 200, path.json()
    assert [n["name"] for n in path.json()["nodes"]] == ["B", "A"]
    assert [(e["source_id"], e["target_id"]) for e in path.json()["edges"]] == [
        (a.node_id, b.node_id)
    ]
    missing = client.get("/api/v1/graph/path", {**forwards, "direction": "out"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "no_path"
    found = client.get("/api/v1/graph/path", {**forwards, "direction": "in"})
    assert found.status_code == 200 and found.json()["hops"] == 1


def test_the_rebuild_command_recreates_nodes_and_edges_from_pages(
    make_page: MakePage, actor: Actor
) -> None:
    from io import StringIO

    from django.core.management import call_command

    from core.models import Account

    target = make_page("Target")
    source = make_page("Source", "[[Target]] and [[Target|again]]")
    # Damage the graph: lose a page's node (and with it the edge), add a stale page node.
    assert target.node is not None
    GraphEdge.objects.filter(target_id=target.node_id).delete()
    Page.objects.filter(pk=target.pk).update(node=None)
    services_graph_delete(actor, target.node)
    stale = make_page("Stale").node
    assert stale is not None
    Page.objects.filter(title="Stale").delete()  # around the services: its node stays
    user_node = services_graph_create(actor, "A web page", entity_type="page")
    out = StringIO()
    account = Account.objects.get(pk=actor.account_id)
    call_command("content_rebuild_graph", account=[account.slug], stdout=out)
    assert "'orphans_removed': 1" in out.getvalue()
    assert set(edges_from(source)) == {"Target"}
    rebuilt = Page.objects.get(pk=target.pk)
    assert rebuilt.node is not None and rebuilt.node.name == "Target"
    assert not GraphNode.objects.filter(pk=stale.pk).exists()
    assert GraphNode.objects.filter(pk=user_node.pk).exists()
    out = StringIO()
    call_command("content_rebuild_graph", account=[account.slug], stdout=out)
    assert "'edges_created': 0, 'edges_removed': 0, 'orphans_removed': 0" in out.getvalue()


def services_graph_delete(actor: Actor, node: GraphNode) -> None:
    from rag.graph.services import nodes as graph_services

    graph_services.node_delete(actor=actor, node=node)


def services_graph_create(actor: Actor, name: str, **kwargs: Any) -> GraphNode:
    from rag.graph.services import nodes as graph_services

    return graph_services.node_create(actor=actor, name=name, **kwargs)


def test_a_title_freed_by_a_rename_whose_sync_is_pending_gets_its_own_node(
    make_page: MakePage, actor: Actor, synced: Callable[..., Any]
) -> None:
    first = make_page("Shared Name")
    services.page_update(actor=actor, page=first, fields={"title": "Moved Away"})  # no sync
    second = make_page("Shared Name")
    first.refresh_from_db()
    assert second.node_id != first.node_id
    assert first.node is not None and first.node.name == "Moved Away"
    assert second.node is not None and second.node.name == "Shared Name"


def test_a_linking_page_whose_sync_is_pending_is_no_unlinked_mention(
    make_page: MakePage, actor: Actor
) -> None:
    target = make_page("Target Page", aliases=["TP"])
    # Saved without running the link sync: no edge yet, but the text links here.
    services.page_create(actor=actor, title="Pending", content="About [[target page|it]].")
    services.page_create(actor=actor, title="Pending Alias", content="See [[TP]] and tp.")
    services.page_create(actor=actor, title="Pending Slug", content="[[target-page]] target page")
    plain = make_page("Plain", "The target page, unlinked.")
    assert [item.id for item in selectors.unlinked_mentions(page=target)] == [plain.pk]


def test_unlinked_mentions_stop_at_twenty_newest_first(make_page: MakePage) -> None:
    target = make_page("Beacon")
    mentioning = [make_page(f"Note {i}", f"the beacon, note {i}") for i in range(23)]
    found = selectors.unlinked_mentions(page=target)
    assert [item.id for item in found] == [p.pk for p in reversed(mentioning)][:20]
