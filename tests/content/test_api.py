"""The pages and articles API: the contract of each path, errors with codes, scopes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from content.models import Article, Page
from core.actors import actor_for_user
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

PAGES = "/api/v1/content/pages"


def code(response: Any) -> str:
    return str(response.json()["error"]["code"])


@pytest.fixture
def api(agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any) -> Callable[..., Any]:
    """Call the API with the on-commit link sync run, as a worker would."""

    def call(method: str, path: str, body: Any = None, **params: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return getattr(agent_client.client, method)(
                path,
                body,
                format="json",
                **({"QUERY_STRING": params["qs"]} if "qs" in params else {}),
            )

    return call


def test_page_lifecycle_and_the_link_panels(api: Callable[..., Any]) -> None:
    created = api(
        "post", PAGES, {"title": "Feature Guide", "content": "How to build.", "aliases": ["FG"]}
    )
    assert created.status_code == 201, created.json()
    guide = created.json()
    assert (guide["slug"], guide["status"], guide["aliases"]) == ("feature-guide", "draft", ["FG"])
    assert guide["author_agent_id"] is not None and guide["node_id"] is None  # synced after commit
    source = api(
        "post", PAGES, {"title": "Roadmap", "content": "Read [[FG|the guide]] and [[Ghost]]."}
    ).json()
    mention = api(
        "post", PAGES, {"title": "Diary", "content": "Today the feature guide helped."}
    ).json()

    backlinks = api("get", f"{PAGES}/{guide['id']}/backlinks").json()
    assert set(backlinks) == {"next", "previous", "results"}
    [item] = backlinks["results"]
    assert (item["id"], item["title"], item["slug"], item["type"]) == (
        source["id"],
        "Roadmap",
        "roadmap",
        "page",
    )
    assert "[[FG|the guide]]" in item["excerpt"] and item["link_text"] == "[[FG|the guide]]"

    mentions = api("get", f"{PAGES}/{guide['id']}/unlinked-mentions").json()
    assert [m["id"] for m in mentions["results"]] == [mention["id"]]

    broken = api("get", f"{PAGES}/{source['id']}/broken-links").json()
    assert [(b["title"], b["slug"], b["id"], b["link_text"]) for b in broken["results"]] == [
        ("Ghost", "ghost", None, "[[Ghost]]")
    ]

    related = api("get", f"{PAGES}/{guide['id']}/related", qs="limit=1").json()
    assert len(related["results"]) == 1 and 0 <= related["results"][0]["similarity"] <= 1

    report = api("post", f"{PAGES}/{source['id']}/extract-links").json()
    assert report == {
        "links": 2,
        "resolved": 1,
        "created": 0,
        "removed": 0,
        "updated": 0,
        "broken": ["Ghost"],
    }

    embedded = api("post", f"{PAGES}/{guide['id']}/generate-embedding").json()
    assert embedded["embedding_model"]

    renamed = api(
        "post", f"{PAGES}/{guide['id']}/rename", {"title": "Build Guide", "rewrite_links": True}
    )
    assert renamed.status_code == 200, renamed.json()
    body = renamed.json()
    assert (body["old_title"], body["new_title"], body["page"]["slug"]) == (
        "Feature Guide",
        "Build Guide",
        "build-guide",
    )
    # The link named an alias, which still names the page: nothing to rewrite.
    assert body["links_rewritten"] == 0 and body["rewritten"] == []

    listed = api("get", PAGES, qs="status=draft").json()
    assert {p["title"] for p in listed["results"]} == {"Build Guide", "Roadmap", "Diary"}
    assert api("delete", f"{PAGES}/{guide['id']}").status_code == 204
    assert code(api("get", f"{PAGES}/{guide['id']}")) == "page_not_found"
    assert api("get", f"{PAGES}/{source['id']}/backlinks").status_code == 200


def test_patch_changes_only_what_is_sent(api: Callable[..., Any]) -> None:
    page = api("post", PAGES, {"title": "Notes", "content": "a"}).json()
    changed = api("patch", f"{PAGES}/{page['id']}", {"status": "published"}).json()
    assert (changed["status"], changed["content"], changed["title"]) == ("published", "a", "Notes")


def test_bad_input_is_a_coded_4xx_and_writes_nothing(api: Callable[..., Any]) -> None:
    api("post", PAGES, {"title": "Taken"})
    assert code(api("post", PAGES, {"title": "TAKEN"})) == "slug_taken"
    huge = api("post", PAGES, {"title": "Huge", "content": "word " * 30_000})
    assert (huge.status_code, code(huge)) == (413, "content_too_long")
    assert code(api("post", PAGES, {"title": "?!"})) == "invalid_title"
    assert api("post", PAGES, {"title": "x", "colour": "red"}).status_code == 400
    assert code(api("get", f"{PAGES}/987654321")) == "page_not_found"
    assert code(api("post", f"{PAGES}/987654321/rename", {"title": "x"})) == "page_not_found"
    page_id = Page.objects.get(title="Taken").pk
    assert code(api("post", f"{PAGES}/{page_id}/rename", {"title": "Taken"})) == "title_unchanged"
    assert api("get", f"{PAGES}/{page_id}/related", qs="limit=51").status_code == 400
    assert Page.objects.count() == 1


def test_a_read_only_key_reads_but_never_writes(
    make_agent_client: Callable[..., AuthedAgent],
    api: Callable[..., Any],
    agent_client: AuthedAgent,
) -> None:
    page = api("post", PAGES, {"title": "Readable"}).json()
    reader = make_agent_client(scopes=("read",), agent=agent_client.agent)
    assert reader.client.get(f"{PAGES}/{page['id']}").status_code == 200
    refused = reader.client.post(PAGES, {"title": "Nope"}, format="json")
    assert (refused.status_code, code(refused)) == (403, "insufficient_scope")
    refused = reader.client.post(f"{PAGES}/{page['id']}/rename", {"title": "Nope"}, format="json")
    assert refused.status_code == 403
    assert Page.objects.get(pk=page["id"]).title == "Readable"


def test_articles_are_read_by_every_account_drafts_by_none(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent, admin_user: Any
) -> None:
    from content import services

    staff = actor_for_user(admin_user)
    published = services.article_save(
        actor=staff,
        article=None,
        fields={"title": "Style Guide", "content": "Write well.", "status": "published"},
    )
    draft = services.article_save(actor=staff, article=None, fields={"title": "Unfinished"})
    for client in (agent_client.client, other_agent_client.client):
        listed = client.get("/api/v1/content/articles").json()
        assert [a["id"] for a in listed["results"]] == [published.pk]
        assert (
            client.get(f"/api/v1/content/articles/{published.pk}").json()["content"]
            == "Write well."
        )
        missing = client.get(f"/api/v1/content/articles/{draft.pk}")
        assert (missing.status_code, code(missing)) == (404, "article_not_found")
    assert Article.objects.count() == 2


def test_only_staff_write_articles(agent_client: AuthedAgent) -> None:
    from content import services
    from core.actors import actor_for_agent
    from core.errors import PermissionDenied

    with pytest.raises(PermissionDenied) as refused:
        services.article_save(
            actor=actor_for_agent(agent_client.agent), article=None, fields={"title": "Mine"}
        )
    assert refused.value.code == "staff_required"
    assert not Article.objects.exists()
