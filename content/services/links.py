"""Pages and articles in the knowledge graph: their nodes, their links as ``references`` edges,
and the embeddings related pages are found by.

A page's node lives in its account's graph (``entity_type`` "page"); an article, being global,
gets a node in an account's graph when a page of that account links to it (``entity_type``
"article"). Node metadata names the content: ``{"content_type", "content_id", "slug"}``.
``links_extract`` makes a page's outgoing ``references`` edges exactly its current resolved links
(``rag.graph.services.nodes.edges_sync``: a diff, idempotent), with the link as written in the
edge's metadata. Embeddings are computed outside transactions (never call a provider inside one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import connection
from django.utils import timezone

from content import selectors, wikilinks
from content.models import Article, Page
from core.actors import WRITE_CONTENT, Actor, actor_for_account
from core.embeddings import generations, get_embedding_provider
from core.queue import task_send_on_commit
from rag.graph import selectors as graph
from rag.graph import services as graph_services
from rag.graph.selectors import REFERENCES

if TYPE_CHECKING:
    from rag.graph.models import GraphNode

PAGE, ARTICLE = "page", "article"
NODE_DESCRIPTION_CHARS = 500


def _metadata(kind: str, item: Page | Article) -> dict[str, Any]:
    return {"content_type": kind, "content_id": item.pk, "slug": item.slug}


def _description(item: Page | Article) -> str:
    return selectors.excerpt(item.content, length=NODE_DESCRIPTION_CHARS)


def _node_fields(kind: str, item: Page | Article) -> dict[str, Any]:
    return {
        "name": item.title,
        "aliases": list(item.aliases),
        "description": _description(item),
        "metadata": _metadata(kind, item),
    }


def _ensure_node(
    *, actor: Actor, account_id: int, kind: str, item: Page | Article, node_id: int | None
) -> GraphNode:
    """``item``'s node in ``account_id``'s graph, made or brought up to date (name, aliases,
    description, metadata: ``rag.graph.services.node_ensure``). A node already holding the name
    (made through the graph API, or left by a deleted page) is adopted rather than duplicated."""

    def adoptable(node: GraphNode) -> bool:
        holder = (
            Page.objects.filter(node_id=node.pk).exclude(pk=item.pk).defer("embedding").first()
            if kind == PAGE
            else None
        )
        if holder is None:
            return True
        # Another page's node still has this page's title (that page was renamed and its sync
        # has not run yet): bring it up to date first, then make this page's own.
        page_node(actor=actor, page=holder)
        return False

    return graph_services.node_ensure(
        actor=actor,
        account_id=account_id,
        name=item.title,
        entity_type=kind,
        node_id=node_id,
        fields={**_node_fields(kind, item), "entity_type": kind},
        adoptable=adoptable,
    ).node


def page_node(*, actor: Actor, page: Page) -> GraphNode:
    """The page's node, made or brought up to date; remembered on the page."""
    node = _ensure_node(
        actor=actor, account_id=page.account_id, kind=PAGE, item=page, node_id=page.node_id
    )
    if page.node_id != node.pk:
        Page.objects.filter(pk=page.pk).update(node=node)
        page.node_id = node.pk
    return node


def _article_node(*, actor: Actor, account_id: int, article: Article) -> GraphNode:
    found = graph.nodes_of_type(
        entity_types=[ARTICLE], account_id=account_id, metadata={"content_id": article.pk}
    ).first()
    return _ensure_node(
        actor=actor,
        account_id=account_id,
        kind=ARTICLE,
        item=article,
        node_id=found.pk if found is not None else None,
    )


def _linked_page_node(*, actor: Actor, page: Page) -> int:
    """A link target's node id without rewriting the target (its own sync keeps it current)."""
    if page.node_id is not None:
        return page.node_id
    full = Page.objects.defer("embedding").get(pk=page.pk)
    return page_node(actor=actor, page=full).pk


@dataclass(frozen=True)
class LinkReport:
    links: int  # wikilinks in the text, repeats included
    resolved: int  # distinct targets that name a page or an article
    created: int
    removed: int
    updated: int
    broken: list[str] = field(default_factory=list)  # distinct unresolved targets, in order


def links_extract(*, actor: Actor, page: Page) -> LinkReport:
    """Make the page's outgoing ``references`` edges exactly its current links."""
    actor.require(page.account_id, WRITE_CONTENT)
    links = wikilinks.parse(page.content)
    found = selectors.resolve(account_id=page.account_id, targets=[link.target for link in links])
    source = page_node(actor=actor, page=page)
    targets: dict[int, dict[str, Any]] = {}
    broken: list[str] = []
    for link in links:
        resolved = found.get(link.target)
        if resolved is None:
            if link.target not in broken:
                broken.append(link.target)
            continue
        if resolved.kind == PAGE:
            assert resolved.page is not None
            if resolved.page.pk == page.pk:
                continue  # a link to itself is no edge
            node_id = _linked_page_node(actor=actor, page=resolved.page)
        else:
            assert resolved.article is not None
            node_id = _article_node(
                actor=actor, account_id=page.account_id, article=resolved.article
            ).pk
        if node_id in targets:
            targets[node_id]["count"] += 1
            continue
        targets[node_id] = {
            "link_text": wikilinks.link_text(page.content, link),
            "display_text": link.display,
            "content_type": resolved.kind,
            "content_id": resolved.id,
            "count": 1,
        }
    current = dict(
        graph.relation_edges(relation_type=REFERENCES, source_ids=[source.pk]).values_list(
            "target_id", "metadata"
        )
    )
    if current == targets:
        # Most syncs (a re-save, the re-syncs after a rename) find the links as they were:
        # nothing to write, so no row lock and no commit to wait for.
        synced = graph_services.EdgeSync(created=0, removed=0, updated=0)
    else:
        synced = graph_services.edges_sync(
            actor=actor, source=source, relation_type=REFERENCES, targets=targets
        )
    return LinkReport(
        links=len(links),
        resolved=len({resolved.id for resolved in found.values()}),
        created=synced.created,
        removed=synced.removed,
        updated=synced.updated,
        broken=broken,
    )


# --- embeddings ------------------------------------------------------------------------------


def embedding_text(item: Page | Article) -> str:
    return f"{item.title}\n\n{item.content}"


def embedding_checksum(item: Page | Article) -> str:
    provider = get_embedding_provider()
    return hashlib.sha256(f"{provider.model_id}\0{embedding_text(item)}".encode()).hexdigest()


def embed(item: Page | Article, *, force: bool = False) -> bool:
    """(Re)compute the embedding of a page or an article when its title or text (or the
    embedding model) changed since the last one, or when ``force``; True when it was written.
    The write is skipped if the text changed meanwhile (the next sync embeds that text)."""
    model = type(item)
    current = model.objects.filter(pk=item.pk).only("title", "content", "embedded_checksum")
    row = current.first()
    if row is None:
        return False
    checksum = embedding_checksum(row)
    if not force and row.embedded_checksum == checksum:
        return False
    provider = get_embedding_provider()
    vector = np.asarray(provider.embed_documents([embedding_text(row)])[0])
    written = model.objects.filter(pk=item.pk, title=row.title, content=row.content).update(
        embedding=vector, embedding_model=provider.model_id, embedded_checksum=checksum
    )
    if written:
        generations.written("pages" if model is Page else "articles", [item.pk])
    return bool(written)


def page_embed(*, actor: Actor, page: Page) -> Page:
    """Recompute the page's embedding now (an author's request)."""
    actor.require(page.account_id, WRITE_CONTENT)
    embed(page, force=True)
    return Page.objects.get(pk=page.pk)


def page_embed_current(*, page: Page) -> Page:
    """The page with an embedding of its current text: computed now if it is missing or stale
    (derived data, like an access count: any reader may bring it up to date)."""
    embed(page)
    return Page.objects.get(pk=page.pk)


# --- sync ------------------------------------------------------------------------------------


def page_sync(*, page_id: int) -> LinkReport | None:
    """After a page was saved: its node, embedding and links (the Celery task's body). Clears
    the page's ``sync_pending_at`` unless a write marked it again meanwhile (that write's sync
    follows)."""
    page = Page.objects.defer("embedding").filter(pk=page_id).first()
    if page is None:
        return None
    actor = actor_for_account(page.account_id)
    report = links_extract(actor=actor, page=page)  # first: backlinks are what authors wait for
    embed(page)
    _sync_done(Page, page)
    return report


def article_sync(*, article_id: int) -> bool:
    """After an article was saved: its embedding (its nodes follow through the pages that link
    to it); clears its ``sync_pending_at`` as ``page_sync`` does. True when it was embedded."""
    article = Article.objects.filter(pk=article_id).defer("embedding").first()
    if article is None:
        return False
    embedded = embed(article)
    _sync_done(Article, article)
    return embedded


def _sync_done(model: type[Page] | type[Article], item: Page | Article) -> None:
    if item.sync_pending_at is not None:
        # Compare-and-set on the mark read before the sync: a newer write keeps its own.
        model.objects.filter(pk=item.pk, sync_pending_at=item.sync_pending_at).update(
            sync_pending_at=None
        )


# A sweep syncs at most this many pages and articles (a run is bounded by its time limit; the
# next run takes the rest), those left pending longest first.
SWEEP_BATCH = 200


def pending_sync_sweep(
    *, pending_after: timedelta = timedelta(minutes=5), dry_run: bool = False
) -> dict[str, int]:
    """Run the syncs that writes marked pending more than ``pending_after`` ago and that never
    ran (their task was not queued: the broker was down at commit time; or a worker died). The
    work itself is idempotent, so a sync that is merely late costs a second, empty run.
    Returns {"pages", "articles"} synced, or found for a dry run."""
    before = timezone.now() - pending_after
    page_ids = list(
        Page.objects.filter(sync_pending_at__lt=before)
        .order_by("sync_pending_at", "pk")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    article_ids = list(
        Article.objects.filter(sync_pending_at__lt=before)
        .order_by("sync_pending_at", "pk")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    if dry_run:
        return {"pages": len(page_ids), "articles": len(article_ids), "dry_run": 1}
    for article_id in article_ids:  # first: the pages' links may name them
        article_sync(article_id=article_id)
    for page_id in page_ids:
        page_sync(page_id=page_id)
    return {"pages": len(page_ids), "articles": len(article_ids)}


def linking_candidates(
    *, account_id: int | None, names: Iterable[str], node_ids: Iterable[int] = ()
) -> list[int]:
    """Pages (of ``account_id``, or of every account) that may link to one of ``names``: those
    whose text holds a name as a phrase (``Page.words``), plus those with ``references``
    edges into ``node_ids``. Their next sync decides."""
    names = [n for n in dict.fromkeys(n.strip() for n in names) if n]
    ids: set[int] = set()
    node_ids = list(node_ids)
    if node_ids:
        ids.update(
            Page.objects.filter(
                node_id__in=graph.relation_edges(
                    relation_type=REFERENCES, target_ids=node_ids
                ).values("source_id")
            ).values_list("id", flat=True)
        )
    if names:
        queries = " || ".join(["phraseto_tsquery('simple'::regconfig, %s)"] * len(names))
        account_sql = "p.account_id = %s AND" if account_id is not None else ""
        params: list[Any] = [account_id] if account_id is not None else []
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT p.id FROM content_page p
                WHERE {account_sql} p.content LIKE '%%[[%%'
                  AND p.words @@ ({queries})
                """,  # noqa: S608 - the placeholders are code
                [*params, *names],
            )
            ids.update(row[0] for row in cursor.fetchall())
    return sorted(ids)


def names_changed(
    *, account_id: int | None, names: Iterable[str], node_ids: Iterable[int] = ()
) -> None:
    """Titles or aliases appeared or went away: re-sync the pages whose links may resolve
    differently now (after this transaction commits)."""
    from content import tasks

    names, node_ids = list(names), list(node_ids)

    def mark_pending() -> None:
        # The broker is down: the pages to re-sync are marked for the sweep instead.
        candidates = linking_candidates(account_id=account_id, names=names, node_ids=node_ids)
        Page.objects.filter(pk__in=candidates).update(sync_pending_at=timezone.now())

    task_send_on_commit(
        tasks.pages_relink,
        account_id=account_id,
        names=names,
        node_ids=node_ids,
        on_failure=mark_pending,
    )


def graph_rebuild(
    *, account_id: int, progress: Callable[[list[int]], Iterable[int]] = lambda ids: ids
) -> dict[str, int]:
    """Recreate an account's page and article nodes and ``references`` edges from its pages:
    every page's node made or updated, its links re-synced (two passes, so that links to pages
    whose nodes the first pass made resolve too), and the page and article nodes that belong
    to no page or article any more deleted (nodes that content did not make are left alone).
    Counts what changed."""
    actor = actor_for_account(account_id)
    page_ids = list(
        Page.objects.filter(account_id=account_id).order_by("pk").values_list("pk", flat=True)
    )
    for page in Page.objects.filter(pk__in=page_ids).defer("embedding").iterator(chunk_size=500):
        page_node(actor=actor, page=page)
    created = removed = 0
    for page_id in progress(page_ids):
        page = Page.objects.defer("embedding").get(pk=page_id)
        embed(page)
        report = links_extract(actor=actor, page=page)
        created += report.created
        removed += report.removed
    kept_pages = set(Page.objects.filter(account_id=account_id).values_list("node_id", flat=True))
    articles = set(Article.objects.values_list("pk", flat=True))
    orphans = 0
    for node in graph.nodes_of_type(entity_types=(PAGE, ARTICLE), account_id=account_id):
        metadata = node.metadata if isinstance(node.metadata, dict) else {}
        if metadata.get("content_type") != node.entity_type:
            continue  # a node made through the graph API, not for a page or an article
        content_id = metadata.get("content_id")
        if node.entity_type == PAGE and node.pk in kept_pages:
            continue
        if node.entity_type == ARTICLE and content_id in articles:
            continue
        graph_services.node_delete(actor=actor, node=node)
        orphans += 1
    return {
        "pages": len(page_ids),
        "edges_created": created,
        "edges_removed": removed,
        "orphans_removed": orphans,
    }
