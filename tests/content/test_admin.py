"""The authors' admin: pages written through the services, the change form's graph panels
(backlinks, unlinked mentions with "link it", related pages, broken links, the preview), renames
that rewrite links, and articles for installation operators. Another account's pages are never
shown or changed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from content import selectors, services
from content.models import Article, Page
from core import services as core_services
from core.actors import INSTALLATION_OPERATORS_GROUP, actor_for_agent, actor_for_user
from core.models import Account, AuditEvent
from tests.factories import AccountFactory, AgentFactory, UserFactory

pytestmark = pytest.mark.django_db

MISSING_ID = 987654321
MENTIONING = "`Harbour Notes` in code, then the harbour notes say little."


@dataclass
class Orchard:
    account: Account
    author: User
    reviewer: User
    target: Page
    linking: Page
    mentioning: Page
    other_author: User
    other_page: Page


@pytest.fixture
def sync(django_capture_on_commit_callbacks: Any) -> Any:
    """Run what is scheduled on commit (the link sync, eager in tests) when the block ends."""

    @contextmanager
    def run() -> Iterator[None]:
        with django_capture_on_commit_callbacks(execute=True):
            yield

    return run


def _member(account: Account, username: str, role: str) -> User:
    user = UserFactory.create(username=username, is_staff=True)
    core_services.membership_grant(account=account, user=user, role=role)
    return user


@pytest.fixture
def orchard(sync: Any) -> Orchard:
    account = AccountFactory.create(name="Orchard", slug="orchard")
    bramble = AccountFactory.create(name="Bramble", slug="bramble")
    writer = actor_for_agent(AgentFactory.create(account=account))
    spy = actor_for_agent(AgentFactory.create(account=bramble))
    with sync():
        target = services.page_create(
            actor=writer,
            title="Harbour Notes",
            content="Tides and moorings of the harbour.",
            aliases=["Port Log"],
        )
        linking = services.page_create(
            actor=writer, title="Tides", content="See [[Harbour Notes]] and [[Nowhere]]."
        )
        mentioning = services.page_create(actor=writer, title="Moorings", content=MENTIONING)
        other = services.page_create(
            actor=spy, title="Bramble Secrets", content="The Harbour Notes of Bramble."
        )
    return Orchard(
        account=account,
        author=_member(account, "ada", "author"),
        reviewer=_member(account, "rex", "reviewer"),
        target=Page.objects.get(pk=target.pk),
        linking=Page.objects.get(pk=linking.pk),
        mentioning=Page.objects.get(pk=mentioning.pk),
        other_author=_member(bramble, "bea", "author"),
        other_page=Page.objects.get(pk=other.pk),
    )


def login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text(response: Any) -> str:
    return response.content.decode(errors="replace")


def same_page(a: Any, b: Any) -> bool:
    token = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')
    return a.status_code == b.status_code and token.sub(b"", a.content) == token.sub(b"", b.content)


def change_url(page: Page | int) -> str:
    return reverse("admin:content_page_change", args=[getattr(page, "pk", page)])


def link_it_url(target: Page | int, source: Page | int) -> str:
    return reverse(
        "admin:content_page_link_mention",
        args=[getattr(target, "pk", target), getattr(source, "pk", source)],
    )


def form_data(page: Page, **changes: Any) -> dict[str, Any]:
    data = {
        "title": page.title,
        "aliases": ",".join(page.aliases),
        "status": page.status,
        "content": page.content,
    }
    return {**data, **changes}


def test_an_author_writes_pages_through_the_services(orchard: Orchard, sync: Any) -> None:
    client = login(orchard.author)
    add = client.get(reverse("admin:content_page_add"))
    form = add.context["adminform"].form
    assert list(form.fields["account"].queryset) == [orchard.account]
    assert form.initial["account"] == orchard.account.pk  # the only account they write
    with sync():
        response = client.post(
            reverse("admin:content_page_add"),
            {
                "account": orchard.account.pk,
                "title": "Ferry Times",
                "aliases": "Ferries, Boats",
                "status": "published",
                "content": "Boats leave from [[Harbour Notes]].\r\nSee [[Nowhere]].",
            },
        )
    assert response.status_code == 302, response.context and response.context["errors"]
    page = Page.objects.get(title="Ferry Times")
    assert (page.account_id, page.author_id, page.aliases) == (
        orchard.account.pk,
        orchard.author.pk,
        ["Ferries", "Boats"],
    )
    assert page.content == "Boats leave from [[Harbour Notes]].\nSee [[Nowhere]]."
    assert AuditEvent.objects.filter(action="content.page.create", user=orchard.author).exists()
    # Its link was synced on commit: a backlink of the target now.
    assert page.pk in selectors.backlinks(page=orchard.target).values_list("pk", flat=True)

    # Posted back as the browser sends it (CRLF line ends): nothing changed, nothing written.
    unchanged = form_data(page, content=page.content.replace("\n", "\r\n"))
    assert client.post(change_url(page), unchanged).status_code == 302
    assert not AuditEvent.objects.filter(action="content.page.update").exists()

    # A new title on the form is an update (links naming the old title stay as written).
    with sync():
        response = client.post(change_url(page), form_data(page, title="Ferry Timetable"))
    assert response.status_code == 302
    page.refresh_from_db()
    assert (page.title, page.slug) == ("Ferry Timetable", "ferry-timetable")
    update = AuditEvent.objects.get(action="content.page.update", target_id=str(page.pk))
    assert update.user_id == orchard.author.pk and update.changes["title"] == "Ferry Timetable"

    # A service's refusal: the form again with its message, nothing written.
    response = client.post(
        reverse("admin:content_page_add"),
        {"account": orchard.account.pk, "title": "tides", "status": "draft", "content": "x"},
    )
    assert response.status_code == 200
    assert "A page with this slug exists in the account." in text(response)
    assert Page.objects.filter(title__iexact="tides").count() == 1

    # Deleting goes through page_delete.
    with sync():
        response = client.post(reverse("admin:content_page_delete", args=[page.pk]), {"post": "y"})
    assert response.status_code == 302
    assert not Page.objects.filter(pk=page.pk).exists()
    delete = AuditEvent.objects.get(action="content.page.delete", target_id=str(page.pk))
    assert delete.user_id == orchard.author.pk


def test_the_list_searches_titles_and_text_and_stays_in_the_account(orchard: Orchard) -> None:
    client = login(orchard.author)
    changelist = reverse("admin:content_page_changelist")
    with CaptureQueriesContext(connection) as queries:
        body = text(client.get(changelist))
    assert "Harbour Notes" in body and "Moorings" in body and "Bramble" not in body
    rows = [q["sql"] for q in queries if q["sql"].startswith('SELECT "content_page"."id"')]
    assert rows and not any('"content_page"."content"' in sql for sql in rows)  # no texts
    assert not any('"content_page"."embedding"' in sql for sql in rows)
    found = text(client.get(changelist, {"q": "moorings"}))  # a title, and a word of a text
    assert "Moorings" in found and "Harbour Notes" in found and "Tides" not in found
    found = text(client.get(changelist, {"q": "say little"}))  # words of a text
    assert "Moorings" in found and "Harbour Notes" not in found
    mine = text(client.get(changelist, {"written_by": "me"}))
    assert "Moorings" not in mine  # an agent wrote it
    agents = text(client.get(changelist, {"written_by": "agents"}))
    assert "Moorings" in agents and "(agent)" in agents


def test_the_change_form_shows_what_the_graph_knows(orchard: Orchard) -> None:
    author, reviewer = login(orchard.author), login(orchard.reviewer)
    response = author.get(change_url(orchard.target))
    assert response.status_code == 200
    body = text(response)
    panels = response.context["content_panels"]
    assert [e.item.title for e in panels.backlinks] == ["Tides"]
    assert [e.item.title for e in panels.mentions] == ["Moorings"]
    assert panels.mentions[0].action == link_it_url(orchard.target, orchard.mentioning)
    assert f'action="{link_it_url(orchard.target, orchard.mentioning)}"' in body
    related = [e.item.title for e in panels.related]
    assert set(related) == {"Tides", "Moorings"}  # own pages only
    assert all(0.0 <= e.item.similarity <= 1.0 for e in panels.related)
    assert 'id="rename-page"' in body
    assert "Bramble" not in body

    # A reviewer reads the panels, without "link it" or renaming.
    body = text(reviewer.get(change_url(orchard.target)))
    assert "Moorings" in body and "Link it" not in body and 'id="rename-page"' not in body

    # The linking page: its broken link with a way to create the page, and the preview.
    response = author.get(change_url(orchard.linking))
    panels = response.context["content_panels"]
    assert [(e.item.link_text, e.href) for e in panels.broken] == [
        (
            "[[Nowhere]]",
            f"{reverse('admin:content_page_add')}?title=Nowhere&account={orchard.account.pk}",
        )
    ]
    assert (
        f'<a class="wikilink" href="{change_url(orchard.target)}" title="page: Harbour Notes"'
    ) in panels.preview
    assert '<a class="wikilink broken" href="/admin/content/page/add/?title=Nowhere' in (
        panels.preview
    )
    assert str(panels.preview) in text(response)
    # For a reviewer, who may not create pages, the broken link leads nowhere.
    panels = reviewer.get(change_url(orchard.linking)).context["content_panels"]
    assert panels.broken[0].href is None
    assert '<span class="wikilink broken"' in panels.preview


def test_a_page_without_an_embedding_gets_one_for_its_related_pages(orchard: Orchard) -> None:
    Page.objects.filter(pk=orchard.target.pk).update(embedding=None, embedded_checksum="")
    response = login(orchard.reviewer).get(change_url(orchard.target))
    assert {e.item.title for e in response.context["content_panels"].related} == {
        "Tides",
        "Moorings",
    }
    assert Page.objects.get(pk=orchard.target.pk).embedding is not None


def test_link_it_makes_the_first_plain_mention_a_wikilink(orchard: Orchard, sync: Any) -> None:
    client = login(orchard.author)
    with sync():
        response = client.post(link_it_url(orchard.target, orchard.mentioning))
    assert response.status_code == 302 and response["Location"] == change_url(orchard.target)
    response = client.get(response["Location"])
    mentioning = Page.objects.get(pk=orchard.mentioning.pk)
    # The mention in code stays; the first plain one is linked, as written.
    assert mentioning.content == (
        "`Harbour Notes` in code, then the [[Harbour Notes|harbour notes]] say little."
    )
    shown = [str(m) for m in response.context["messages"]]
    assert shown == ["Linked “Harbour Notes” in “Moorings”."]
    panels = response.context["content_panels"]
    assert {e.item.title for e in panels.backlinks} == {"Tides", "Moorings"}
    assert panels.mentions == []
    event = AuditEvent.objects.get(action="content.page.update", target_id=str(mentioning.pk))
    assert event.user_id == orchard.author.pk

    # Nothing left to link: said so, nothing written.
    response = client.post(link_it_url(orchard.target, orchard.mentioning), follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [
        "Moorings: “Moorings” does not mention “Harbour Notes” outside code and links."
    ]
    assert Page.objects.get(pk=orchard.mentioning.pk).content == mentioning.content
    assert client.get(link_it_url(orchard.target, orchard.mentioning)).status_code == 405


def test_link_it_needs_the_right_to_write_the_mentioning_page(orchard: Orchard) -> None:
    reviewer = login(orchard.reviewer)
    assert reviewer.post(link_it_url(orchard.target, orchard.mentioning)).status_code == 403
    # Another account's author: A's pages are as missing as missing ones, on either side.
    intruder = login(orchard.other_author)
    own = orchard.other_page
    for target, source in (
        (orchard.target, orchard.mentioning),
        (own, orchard.mentioning),
        (orchard.target, own),
    ):
        answer = intruder.post(link_it_url(target, source))
        missing = intruder.post(
            link_it_url(MISSING_ID if target != own else own, MISSING_ID if source != own else own)
        )
        assert answer.status_code == 404 and same_page(answer, missing)
        assert "Harbour" not in text(answer)
    # A's author cannot link B's page to theirs either.
    author = login(orchard.author)
    assert author.post(link_it_url(orchard.target, own)).status_code == 404
    assert Page.objects.get(pk=orchard.mentioning.pk).content == MENTIONING
    assert Page.objects.get(pk=own.pk).content == "The Harbour Notes of Bramble."
    assert not AuditEvent.objects.filter(action="content.page.update").exists()


def test_rename_rewrites_the_links_to_the_page(orchard: Orchard, sync: Any) -> None:
    client = login(orchard.author)
    rename = reverse("admin:content_page_rename", args=[orchard.target.pk])
    page = client.get(rename)
    assert page.status_code == 200 and "1 page(s) link to “Harbour Notes”." in text(page)

    # A title another page has: refused on the form, nothing changed.
    response = client.post(rename, {"title": "Tides", "rewrite_links": "on"})
    assert response.status_code == 200
    assert "A page with this slug exists in the account." in text(response)
    assert Page.objects.get(pk=orchard.linking.pk).content.startswith("See [[Harbour Notes]]")

    with sync():
        response = client.post(rename, {"title": "Harbour Journal", "rewrite_links": "on"})
    assert response.status_code == 302 and response["Location"] == change_url(orchard.target)
    assert Page.objects.get(pk=orchard.target.pk).title == "Harbour Journal"
    assert Page.objects.get(pk=orchard.linking.pk).content == (
        "See [[Harbour Journal]] and [[Nowhere]]."
    )
    shown = [str(m) for m in client.get(change_url(orchard.target)).context["messages"]]
    assert shown == [
        "Renamed “Harbour Notes” to “Harbour Journal”; rewrote 1 link(s) in 1 other page(s)."
    ]

    # Without rewriting, the links keep naming the old title (and break).
    with sync():
        client.post(rename, {"title": "Harbour Log"})
    assert Page.objects.get(pk=orchard.linking.pk).content == (
        "See [[Harbour Journal]] and [[Nowhere]]."
    )

    assert login(orchard.reviewer).get(rename).status_code == 403
    intruder = login(orchard.other_author)
    answer = intruder.get(rename)
    missing = intruder.get(reverse("admin:content_page_rename", args=[MISSING_ID]))
    assert answer.status_code == 404 and same_page(answer, missing)


@pytest.fixture
def installation_operator() -> User:
    user = UserFactory.create(username="ivo", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name=INSTALLATION_OPERATORS_GROUP)[0])
    return user


def test_installation_operators_write_articles_through_the_services(
    installation_operator: User, sync: Any
) -> None:
    client = login(installation_operator)
    add = reverse("admin:content_article_add")
    with sync():
        response = client.post(
            add,
            {
                "title": "Style Guide",
                "aliases": "Styleguide",
                "status": "published",
                "content": "Write plainly.\r\n",
            },
        )
    assert response.status_code == 302
    article = Article.objects.get(title="Style Guide")
    assert (article.author_id, article.content, article.slug) == (
        installation_operator.pk,
        "Write plainly.\n",
        "style-guide",
    )
    with sync():
        response = client.post(
            reverse("admin:content_article_change", args=[article.pk]),
            {"title": "Style Guide", "aliases": "Styleguide", "status": "draft", "content": "x"},
        )
    assert response.status_code == 302
    article.refresh_from_db()
    assert (article.status, article.content) == ("draft", "x")
    # A taken slug: the form again with the service's message.
    response = client.post(add, {"title": "style guide", "status": "draft", "content": ""})
    assert response.status_code == 200 and "An article with this slug exists." in text(response)
    with sync():
        response = client.post(
            reverse("admin:content_article_changelist"),
            {"action": "delete_selected", "_selected_action": [article.pk], "post": "yes"},
            follow=True,
        )
    assert [str(m) for m in response.context["messages"]] == ["Deleted 1 article(s)."]
    assert not Article.objects.filter(pk=article.pk).exists()
    actions = AuditEvent.objects.filter(user=installation_operator).values_list("action", flat=True)
    assert set(actions) == {
        "content.article.create",
        "content.article.update",
        "content.article.delete",
    }


def test_account_members_do_not_manage_articles(orchard: Orchard, sync: Any) -> None:
    staff = actor_for_user(UserFactory.create(username="sam", is_staff=True))
    with sync():
        article = services.article_save(
            actor=staff, article=None, fields={"title": "Guide", "status": "published"}
        )
    owner = _member(orchard.account, "olga", "owner")
    client = login(owner)
    assert client.get(reverse("admin:content_article_changelist")).status_code == 403
    assert client.get(reverse("admin:content_article_add")).status_code == 403
    for view in ("change", "history", "delete"):
        for method in ("get", "post"):
            call = getattr(client, method)
            answer = call(reverse(f"admin:content_article_{view}", args=[article.pk]))
            missing = call(reverse(f"admin:content_article_{view}", args=[MISSING_ID]))
            assert answer.status_code == 403 and same_page(answer, missing), (view, method)
    assert Article.objects.filter(pk=article.pk).exists()
    # A superuser sees and changes them; a missing id is a plain 404 for them.
    root = login(UserFactory.create(username="root", is_staff=True, is_superuser=True))
    assert "Guide" in text(root.get(reverse("admin:content_article_changelist")))
    answer = root.get(reverse("admin:content_article_history", args=[MISSING_ID]))
    assert answer.status_code == 404
