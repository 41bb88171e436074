"""Writing pages and articles. Every save schedules the link sync on commit (the page's node,
embedding and ``references`` edges: ``content.tasks.page_sync``), marked pending in the write's
transaction so that a broker down at commit time delays the sync instead of losing it (the sweep
``content.sync_pending``); a change of title or aliases also re-syncs the pages whose links may
now resolve differently. Renames can rewrite the links
that name the old title, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from content import selectors, wikilinks
from content.models import Article, Page, Status
from content.services import links
from core.actors import WRITE_CONTENT, Actor, actor_for_account
from core.audit import audit_record
from core.errors import Conflict, PayloadTooLarge, PermissionDenied, ValidationFailed
from core.queue import task_send_on_commit
from core.writes import changes_of, row_delete, row_locked, row_update
from rag.graph import selectors as graph
from rag.graph import services as graph_services

# A page's text is indexed word by word (tsvector, at most 1 MB); this keeps far below it.
MAX_CONTENT_CHARS = 100_000
MAX_TITLE_CHARS = 300
MAX_ALIASES = 50
PAGE_UPDATABLE_FIELDS = ("title", "content", "aliases", "status")


def _slug_taken() -> Conflict:
    return Conflict("A page with this slug exists in the account.", code="slug_taken")


_PAGE_CONFLICTS = {"content_page_unique_slug": _slug_taken}


def _title(value: str) -> str:
    value = " ".join(value.split())
    if not value:
        raise ValidationFailed("The title is empty.", code="empty_title")
    if len(value) > MAX_TITLE_CHARS:
        raise ValidationFailed(
            f"A title has at most {MAX_TITLE_CHARS} characters.", code="title_too_long"
        )
    if not wikilinks.slugify(value):
        raise ValidationFailed(
            "The title needs a letter or a digit (its slug would be empty).",
            code="invalid_title",
        )
    if any(c in value for c in "[]|"):
        raise ValidationFailed(
            "A title cannot contain [, ] or | (wikilinks could not name it).",
            code="invalid_title",
        )
    return value


def _content(value: str) -> str:
    if "\x00" in value:
        raise ValidationFailed("The text holds a NUL character.", code="invalid_content")
    if len(value) > MAX_CONTENT_CHARS:
        raise PayloadTooLarge(
            f"A text has at most {MAX_CONTENT_CHARS} characters.",
            code="content_too_long",
            details={"max_chars": MAX_CONTENT_CHARS, "chars": len(value)},
        )
    return value


def _aliases(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    kept: list[str] = []
    for value in values:
        value = " ".join(value.split())
        key = wikilinks.normalise_title(value)
        if value and key not in seen:
            if len(value) > MAX_TITLE_CHARS or any(c in value for c in "[]|"):
                raise ValidationFailed(
                    f"An alias has at most {MAX_TITLE_CHARS} characters and no [, ] or |.",
                    code="invalid_alias",
                )
            seen.add(key)
            kept.append(value)
    if len(kept) > MAX_ALIASES:
        raise ValidationFailed(f"At most {MAX_ALIASES} aliases.", code="too_many_aliases")
    return kept


def _derived(title: str, aliases: Sequence[str]) -> dict[str, Any]:
    return {
        "slug": wikilinks.slugify(title),
        "title_key": wikilinks.normalise_title(title),
        "alias_keys": [wikilinks.normalise_title(a) for a in aliases],
    }


def _clean(fields: Mapping[str, Any]) -> dict[str, Any]:
    cleaned = dict(fields)
    if "title" in cleaned:
        cleaned["title"] = _title(cleaned["title"])
    if "content" in cleaned:
        cleaned["content"] = _content(cleaned["content"])
    if "aliases" in cleaned:
        cleaned["aliases"] = _aliases(cleaned["aliases"])
    if "status" in cleaned and cleaned["status"] not in Status.values:
        raise ValidationFailed("Unknown status.", code="invalid_status")
    return cleaned


def _sync_on_commit(*page_ids: int) -> None:
    """Mark the pages' sync pending in this transaction, and queue it once it commits: the
    marker outlives a broker that is down then (the sweep, ``content.sync_pending``, runs what
    stayed pending); the sync clears it."""
    from content import tasks

    if not page_ids:
        return
    Page.objects.filter(pk__in=page_ids).update(sync_pending_at=timezone.now())
    for page_id in page_ids:
        task_send_on_commit(tasks.page_sync, page_id)


def _article_sync_on_commit(article_id: int) -> None:
    from content import tasks

    Article.objects.filter(pk=article_id).update(sync_pending_at=timezone.now())
    task_send_on_commit(tasks.article_sync, article_id)


# --- pages -----------------------------------------------------------------------------------


def page_create(
    *,
    actor: Actor,
    title: str,
    content: str = "",
    aliases: Sequence[str] = (),
    status: str = Status.DRAFT,
    account_id: int | None = None,
) -> Page:
    """A page of the account; 409 ``slug_taken`` when its title's slug is another page's."""
    account_id = account_id if account_id is not None else actor.account_id
    actor.require(account_id, WRITE_CONTENT)
    fields = _clean({"title": title, "content": content, "aliases": aliases, "status": status})
    page = Page(
        account_id=account_id,
        author=actor.user if actor.agent is None else None,  # type: ignore[misc]
        author_agent=actor.agent,
        **fields,
        **_derived(fields["title"], fields["aliases"]),
    )
    try:
        with transaction.atomic():
            page.save()
            audit_record(
                actor=actor,
                action="content.page.create",
                account_id=account_id,
                target=page,
                changes={"title": page.title, "slug": page.slug, "status": page.status},
            )
            _sync_on_commit(page.pk)
            links.names_changed(account_id=account_id, names=[page.title, *page.aliases])
    except IntegrityError as exc:
        if "content_page_unique_slug" in str(exc):
            raise _slug_taken() from exc
        raise
    return page


def page_update(*, actor: Actor, page: Page, fields: Mapping[str, Any]) -> Page:
    """Change a page's title, text, aliases or status. A new title is a rename that leaves the
    links naming the old one as they are (``page_rename`` can rewrite them)."""
    actor.require(page.account_id, WRITE_CONTENT)
    changes = changes_of(page, _clean(fields), PAGE_UPDATABLE_FIELDS)
    if not changes:
        return page
    renamed = "title" in changes or "aliases" in changes
    if renamed:
        changes.update(
            _derived(changes.get("title", page.title), changes.get("aliases", page.aliases))
        )
    old_names = [page.title, *page.aliases]
    with transaction.atomic():
        updated = row_update(
            actor=actor,
            instance=page,
            changes=changes,
            action="content.page.update",
            account_id=page.account_id,
            conflicts=_PAGE_CONFLICTS,
            missing=selectors.page_not_found,
            audit_changes={k: v for k, v in changes.items() if k not in ("content", "alias_keys")},
        )
        _sync_on_commit(page.pk)
        if renamed:
            links.names_changed(
                account_id=page.account_id,
                names=[*old_names, updated.title, *updated.aliases],
                node_ids=[page.node_id] if page.node_id else [],
            )
    return updated


def page_write(
    *,
    actor: Actor,
    title: str,
    content: str,
    aliases: Sequence[str] | None = None,
    status: str | None = None,
) -> tuple[Page, bool]:
    """Write a page by its title: the account's page whose slug is the title's gets ``content``
    (and ``aliases`` / ``status`` when given; its title stays); without one, a new page (a
    draft unless ``status`` says otherwise). Answers the page and whether it was created. A
    concurrent writer creating the same page makes this an update of it."""
    account_id = actor.account_id
    actor.require(account_id, WRITE_CONTENT)
    slug = wikilinks.slugify(_title(title))
    fields: dict[str, Any] = {"content": content}
    if aliases is not None:
        fields["aliases"] = aliases
    if status is not None:
        fields["status"] = status
    for _ in range(2):
        existing = Page.objects.filter(account_id=account_id, slug=slug).defer("embedding").first()
        if existing is not None:
            return page_update(actor=actor, page=existing, fields=fields), False
        try:
            return page_create(actor=actor, title=title, **fields), True
        except Conflict as exc:
            if exc.code != "slug_taken":
                raise
    raise _slug_taken()  # pragma: no cover - created and deleted between two reads


def page_delete(*, actor: Actor, page: Page) -> None:
    """Delete a page and its graph node (its links go with it); the pages that linked to it
    are re-synced (a link may now name an article of the same title)."""
    actor.require(page.account_id, WRITE_CONTENT)
    with transaction.atomic():
        node = graph.node_by_id(page.node_id)
        if node is not None:
            sources = links.linking_candidates(
                account_id=page.account_id, names=[], node_ids=[node.pk]
            )
        row_delete(
            actor=actor,
            instance=page,
            action="content.page.delete",
            account_id=page.account_id,
            changes={"title": page.title, "slug": page.slug},
        )
        if node is not None:
            graph_services.node_delete(actor=actor, node=node)
            _sync_on_commit(*[s for s in sources if s != page.pk])


def page_link_mention(*, actor: Actor, page: Page, target: Page) -> Page:
    """Make the first plain mention of ``target`` (its title or an alias, as whole words, any
    case) in ``page``'s text a wikilink to it: "link it" on the target's unlinked mentions.
    ``[[Title]]`` when the mention reads as the title, else ``[[Title|the mention]]``; mentions
    in code, links and URLs are left alone. 404 ``page_not_found`` when the pages are of
    different accounts; 400 ``no_plain_mention`` when ``page`` has none (any more)."""
    actor.require(page.account_id, WRITE_CONTENT)
    if target.account_id != page.account_id or target.pk == page.pk:
        raise selectors.page_not_found()
    with transaction.atomic():
        locked = row_locked(
            Page.objects.defer("embedding"), page.pk, missing=selectors.page_not_found
        )
        text = wikilinks.link_first_mention(
            locked.content, names=[target.title, *target.aliases], title=target.title
        )
        if text is None:
            raise ValidationFailed(
                f"“{locked.title}” does not mention “{target.title}” outside code and links.",
                code="no_plain_mention",
            )
        return page_update(actor=actor, page=locked, fields={"content": text})


@dataclass(frozen=True)
class RewrittenPage:
    page: Page
    links: int


@dataclass(frozen=True)
class Rename:
    page: Page
    old_title: str
    new_title: str
    rewritten: list[RewrittenPage]

    @property
    def links_rewritten(self) -> int:
        return sum(r.links for r in self.rewritten)


def page_rename(*, actor: Actor, page: Page, title: str, rewrite_links: bool = True) -> Rename:
    """Give a page a new title (and slug); with ``rewrite_links``, every link naming the old
    title or slug, in the account's pages (this one included), is rewritten to name the new
    title, display text and anchors kept: all in one transaction, so a conflict (409
    ``slug_taken``) changes nothing. 400 ``title_unchanged`` when the title is the same."""
    actor.require(page.account_id, WRITE_CONTENT)
    title = _title(title)
    if title == page.title:
        raise ValidationFailed("The page has this title already.", code="title_unchanged")
    old_title, old_slug = page.title, page.slug
    with transaction.atomic():
        locked = row_locked(Page.objects.all(), page.pk, missing=selectors.page_not_found)
        rewritten: list[RewrittenPage] = []
        if rewrite_links:
            candidates = links.linking_candidates(
                account_id=page.account_id,
                names=[old_title, old_slug],
                node_ids=[page.node_id] if page.node_id else [],
            )
            rewritten = _rewrite_links(
                actor=actor,
                account_id=page.account_id,
                page_ids=sorted({*candidates, page.pk}),
                titles={wikilinks.normalise_title(old_title)},
                slugs={old_slug},
                new_title=title,
            )
        renamed = row_update(
            actor=actor,
            instance=Page.objects.defer("embedding").get(pk=page.pk),
            changes={"title": title, **_derived(title, locked.aliases)},
            action="content.page.rename",
            account_id=page.account_id,
            conflicts=_PAGE_CONFLICTS,
            missing=selectors.page_not_found,
            audit_changes={"title": title, "old_title": old_title},
        )
        _sync_on_commit(page.pk, *[r.page.pk for r in rewritten if r.page.pk != page.pk])
        links.names_changed(
            account_id=page.account_id,
            names=[old_title, title],
            node_ids=[page.node_id] if page.node_id else [],
        )
    return Rename(page=renamed, old_title=old_title, new_title=title, rewritten=rewritten)


def _rewrite_links(
    *,
    actor: Actor,
    account_id: int,
    page_ids: list[int],
    titles: set[str],
    slugs: set[str],
    new_title: str,
) -> list[RewrittenPage]:
    rewritten: list[RewrittenPage] = []
    for candidate in (
        Page.objects.select_for_update()
        .filter(account_id=account_id, pk__in=page_ids)
        .defer("embedding")
        .order_by("pk")
    ):
        text, count = wikilinks.rewrite(
            candidate.content, titles=titles, slugs=slugs, new_title=new_title
        )
        if not count:
            continue
        _content(text)  # a longer title may push a page past the limit: 413, nothing written
        Page.objects.filter(pk=candidate.pk).update(content=text, updated_at=timezone.now())
        candidate.content = text
        audit_record(
            actor=actor,
            action="content.page.links_rewritten",
            account_id=account_id,
            target=candidate,
            changes={"links": count, "new_title": new_title},
        )
        rewritten.append(RewrittenPage(page=candidate, links=count))
    return rewritten


# --- articles (staff) ------------------------------------------------------------------------


def _require_staff(actor: Actor) -> None:
    user = actor.user
    if user is None or not (getattr(user, "is_staff", False) and user.is_active):
        raise PermissionDenied("Only staff write articles.", code="staff_required")


def _article_conflicts(exc: IntegrityError) -> None:
    if "content_article_unique_slug" in str(exc):
        raise Conflict("An article with this slug exists.", code="slug_taken") from exc
    raise exc


def article_save(*, actor: Actor, article: Article | None, fields: Mapping[str, Any]) -> Article:
    """Create (``article`` None) or change an article; staff only. Titles and aliases that
    change re-sync the pages of every account that may link to them."""
    _require_staff(actor)
    cleaned = _clean(fields)
    old_names: list[str] = []
    if article is None:
        article = Article(author=actor.user)  # type: ignore[misc]
    else:
        old_names = [article.title, *article.aliases]
    for name, value in cleaned.items():
        setattr(article, name, value)
    for name, value in _derived(article.title, article.aliases).items():
        setattr(article, name, value)
    created = article.pk is None
    try:
        with transaction.atomic():
            article.save()
            audit_record(
                actor=actor,
                action="content.article.create" if created else "content.article.update",
                account_id=None,
                target=article,
                changes={"title": article.title, "status": article.status},
            )
            _article_sync_on_commit(article.pk)
            nodes = graph.node_ids_of_type(
                entity_types=[links.ARTICLE], metadata={"content_id": article.pk}
            )
            links.names_changed(
                account_id=None,
                names=[*old_names, article.title, *article.aliases],
                node_ids=list(nodes),
            )
    except IntegrityError as exc:
        _article_conflicts(exc)
    return article


def article_delete(*, actor: Actor, article: Article) -> None:
    _require_staff(actor)
    with transaction.atomic():
        nodes = list(
            graph.nodes_of_type(entity_types=[links.ARTICLE], metadata={"content_id": article.pk})
        )
        sources = links.linking_candidates(
            account_id=None, names=[], node_ids=[node.pk for node in nodes]
        )
        audit_record(
            actor=actor,
            action="content.article.delete",
            account_id=None,
            target=article,
            changes={"title": article.title},
        )
        article.delete()
        for node in nodes:  # out of each account's graph index too
            graph_services.node_delete(actor=actor_for_account(node.account_id), node=node)
        _sync_on_commit(*sources)
