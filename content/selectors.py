"""Reads of pages and articles: lists, link resolution, backlinks, unlinked mentions, related
pages and broken links. Scoped by the actor inside each query; a missing page and another
account's answer the same 404 ``page_not_found``.

Backlinks are the ``references`` edges into the page's graph node (``rag``), so they are exactly
what the last link sync found. Unlinked mentions are found by PostgreSQL: the pages' stored
words (``Page.words``, ``simple`` configuration: whole words, any case; the
``content_page_words`` GIN index) narrow the account's pages to those holding a name's words;
those not linking here yet are confirmed by a phrase match and a word-bounded regular
expression. For a rare name the planner starts from the index; for a frequent one it walks the
newest pages until it has enough.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
from django.db import connection
from django.db.models import Count, F, QuerySet
from pgvector.django import CosineDistance

from content import wikilinks
from content.models import Article, Page, Status, WrittenContent
from content.tuning import TUNING
from core.actors import Actor
from core.errors import NotFound
from core.search import TimedHits, top_k_check
from rag.graph import selectors as graph
from rag.graph.selectors import REFERENCES, node_search

MAX_MENTIONS = 20
DEFAULT_RELATED, MAX_RELATED = 10, 50

Kind = Literal["page", "article"]
M = TypeVar("M", bound=WrittenContent)


def page_not_found() -> NotFound:
    return NotFound("No such page.", code="page_not_found")


def article_not_found() -> NotFound:
    return NotFound("No such article.", code="article_not_found")


def page_list(*, actor: Actor) -> QuerySet[Page]:
    return Page.objects.for_actor(actor).defer("embedding")


def page_get(*, actor: Actor, page_id: int) -> Page:
    page = page_list(actor=actor).filter(pk=page_id).first()
    if page is None:
        raise page_not_found()
    return page


def page_find(*, actor: Actor, page_id: int | None = None, slug: str = "", title: str = "") -> Page:
    """A page of the actor's accounts by its id, its slug or its title (compared as links
    compare titles: any case, spaces collapsed; then its aliases, then the title's slug, as a
    link resolves). A missing page and another account's answer the same 404."""
    pages = page_list(actor=actor)
    if page_id is not None:
        found = pages.filter(pk=page_id).first()
    elif slug:
        found = pages.filter(slug=slug).order_by("pk").first()
    else:
        key, title_slug = wikilinks.normalise_title(title), wikilinks.slugify(title)
        found = (
            pages.filter(title_key=key).order_by("pk").first()
            or pages.filter(alias_keys__contains=[key]).order_by("pk").first()
            or (pages.filter(slug=title_slug).order_by("pk").first() if title_slug else None)
        )
    if found is None:
        raise page_not_found()
    return found


@dataclass(frozen=True)
class PageHit:
    page: Page
    score: float | None
    retrieval: dict[str, Any]


def page_search(
    *,
    actor: Actor,
    query: str,
    top_k: int = 10,
    mode: str = "hybrid",
    query_vector: np.ndarray | None = None,
) -> list[PageHit]:
    """The actor's pages best matching ``query`` by title, aliases and the start of their text:
    the search over their graph nodes (``rag.graph.selectors.node_search``, type "page"), so a
    page is found once its link sync has made its node. Without pages, one EXISTS: the node
    search's filtered vector scan would walk the whole graph index for none."""
    if not page_list(actor=actor).exists():
        return []
    hits = node_search(
        actor=actor, query=query, top_k=top_k, mode=mode, entity_type="page",
        query_vector=query_vector,
    )  # fmt: skip
    found = page_list(actor=actor).filter(node_id__in=[hit.node.pk for hit in hits])
    pages = {page.node_id: page for page in found}
    return [
        PageHit(page=pages[hit.node.pk], score=hit.score, retrieval=hit.retrieval)
        for hit in hits
        if hit.node.pk in pages
    ]


def article_list() -> QuerySet[Article]:
    """Published articles: every account reads them."""
    return Article.objects.filter(status=Status.PUBLISHED).defer("embedding")


def article_get(*, article_id: int) -> Article:
    article = article_list().filter(pk=article_id).first()
    if article is None:
        raise article_not_found()
    return article


# --- excerpts --------------------------------------------------------------------------------

_SPACES = re.compile(r"\s+")


def excerpt(text: str, *, at: int | None = None, length: int | None = None) -> str:
    """About ``length`` characters of ``text`` (``TUNING.answers.excerpt_chars``) on one line: its
    beginning, or around ``at``."""
    length = TUNING.answers.excerpt_chars if length is None else length
    start = 0 if at is None or at < length // 2 else at - length // 2
    piece = _SPACES.sub(" ", text[start : start + length]).strip()
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + length < len(text) else ""
    return f"{prefix}{piece}{suffix}"


# --- resolution ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    kind: Kind
    page: Page | None = None
    article: Article | None = None

    @property
    def id(self) -> int:
        found = self.page if self.page is not None else self.article
        assert found is not None
        return found.pk


class _Candidates:
    """Pages or articles a set of link targets may name, looked up the way a link resolves:
    title, then alias, then slug; of several, the oldest."""

    def __init__(self, candidates: Iterable[WrittenContent]) -> None:
        self.titles: dict[str, WrittenContent] = {}
        self.aliases: dict[str, WrittenContent] = {}
        self.slugs: dict[str, WrittenContent] = {}
        for candidate in sorted(candidates, key=lambda c: c.pk):
            self.titles.setdefault(candidate.title_key, candidate)
            for alias in candidate.alias_keys:
                self.aliases.setdefault(alias, candidate)
            self.slugs.setdefault(candidate.slug, candidate)

    def pick(self, target: str) -> WrittenContent | None:
        key, slug = wikilinks.normalise_title(target), wikilinks.slugify(target)
        found = self.titles.get(key) or self.aliases.get(key)
        if found is None and slug:
            found = self.slugs.get(slug)
        return found


_NAMED_FIELDS = "id, title, slug, title_key, alias_keys"


def _named(model: type[M], targets: Sequence[str], where: str, params: list[Any]) -> list[M]:
    """The rows (``where`` holds) whose title, an alias or the slug a target may name, with the
    fields resolution reads. Raw SQL: three index scans united, the keys bound as three arrays.
    (The ORM's ``IN`` lists bound a parameter per key, and psycopg's client-side binding of
    some 300 parameters, with the planning of one ``OR`` over the three indexes, cost more than
    running the query: docs/benchmarks-log.md, "Pages and links".)"""
    keys = list({wikilinks.normalise_title(t) for t in targets})
    slugs = list({s for t in targets if (s := wikilinks.slugify(t))})
    table = model._meta.db_table
    # What a resolved link reads: a page's node and account; an article's aliases and status
    # (its node is made in the linking account).
    extra = "node_id, account_id" if model is Page else "aliases, status"
    fields = f"{_NAMED_FIELDS}, {extra}"
    select = f"SELECT {fields} FROM {table} WHERE {where}"  # noqa: S608 - names from code
    sql = (
        f"{select} AND title_key = ANY(%s) UNION {select} AND alias_keys && %s::varchar[] "
        f"UNION {select} AND slug = ANY(%s)"
    )
    return list(model._default_manager.raw(sql, [*params, keys, *params, keys, *params, slugs]))


def resolve(*, account_id: int, targets: Iterable[str]) -> dict[str, Resolved]:
    """What each link target names: a page of the account (by title, alias, then slug, compared
    as ``content.wikilinks`` says), else a published article. Unresolved targets are absent."""
    targets = list(dict.fromkeys(targets))
    if not targets:
        return {}
    pages = _Candidates(_named(Page, targets, "account_id = %s", [account_id]))
    found: dict[str, Resolved] = {}
    for target in targets:
        page = pages.pick(target)
        if page is not None:
            found[target] = Resolved(kind="page", page=page)  # type: ignore[arg-type]
    rest = [t for t in targets if t not in found]
    if rest:
        articles = _Candidates(_named(Article, rest, "status = %s", [Status.PUBLISHED]))
        for target in rest:
            article = articles.pick(target)
            if article is not None:
                found[target] = Resolved(kind="article", article=article)  # type: ignore[arg-type]
    return found


# --- link panels -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkedItem:
    """One entry of a backlinks, mentions, related or broken-links answer."""

    id: int | None
    title: str
    slug: str
    type: Kind | None
    excerpt: str
    similarity: float | None = None
    link_text: str | None = None


def backlinks(*, page: Page) -> QuerySet[Page]:
    """The pages whose links reach ``page`` (``references`` edges into its node)."""
    if page.node_id is None:
        return Page.objects.none()
    sources = graph.relation_edges(relation_type=REFERENCES, target_ids=[page.node_id]).values(
        "source_id"
    )
    return (
        Page.objects.filter(account_id=page.account_id, node_id__in=sources)
        .exclude(pk=page.pk)
        .defer("embedding")
    )


def backlink_items(*, page: Page, sources: Iterable[Page]) -> list[LinkedItem]:
    """Backlinks with an excerpt around the first link that reaches ``page``."""
    sources = list(sources)
    texts = dict(
        graph.relation_edges(
            relation_type=REFERENCES,
            target_ids=[page.node_id] if page.node_id else [],
            source_ids=[s.node_id for s in sources if s.node_id],
        ).values_list("source_id", "metadata__link_text")
    )
    items = []
    for source in sources:
        link = (texts.get(source.node_id) if source.node_id else None) or ""
        at = source.content.find(link) if link else -1
        items.append(
            LinkedItem(
                id=source.pk,
                title=source.title,
                slug=source.slug,
                type="page",
                excerpt=excerpt(source.content, at=at if at >= 0 else None),
                link_text=link or None,
            )
        )
    return items


def _names(page: Page) -> list[str]:
    names = [page.title, *page.aliases]
    return [n for n in dict.fromkeys(n.strip() for n in names) if n]


def _mention_pattern(names: Sequence[str]) -> str:
    """A PostgreSQL regular expression matching any of ``names`` as whole words (any spacing);
    used case-insensitively (``~*``)."""
    alternatives = [
        r"[[:space:]]+".join(re.escape(word) for word in name.split()) for name in names
    ]
    return r"(^|[^[:alnum:]_])(" + "|".join(alternatives) + r")($|[^[:alnum:]_])"


def _links_to(text: str, *, keys: set[str], slug: str) -> bool:
    """Does ``text`` hold a link naming a page of these title / alias keys or this slug?"""
    return any(
        wikilinks.normalise_title(link.target) in keys or wikilinks.slugify(link.target) == slug
        for link in wikilinks.parse(text)
    )


def unlinked_mentions(*, page: Page, limit: int = MAX_MENTIONS) -> list[LinkedItem]:
    """The account's other pages whose text names ``page`` (its title or an alias, as whole
    words, any case) without linking to it, most recently changed first, at most ``limit``.

    PostgreSQL finds and orders the candidates (the words index narrows, a regular expression
    confirms, linking pages' edges exclude); a page whose text links here but whose link sync
    has not run yet is excluded too, by reading the links of those few candidates."""
    names = _names(page)
    if not names:
        return []
    # The index finds the pages holding every word of a name: exact, nothing rechecked. Only
    # those not linking here yet are then tested for the phrase (reading their stored words)
    # and the expression: a hub's hundreds of linking pages cost a probe each of the linking
    # nodes (read once, hashed), not a phrase test (the CASE fixes that order). For a frequent
    # name the planner walks the newest pages instead and stops at the batch. The same pages
    # as testing the phrase first: a page with the phrase has all its words
    # (docs/benchmarks-log.md, "Pages and links").
    words = " || ".join(["plainto_tsquery('simple'::regconfig, %s)"] * len(names))
    phrases = " || ".join(["phraseto_tsquery('simple'::regconfig, %s)"] * len(names))
    keys = {wikilinks.normalise_title(name) for name in names}
    pattern = re.compile(
        r"(?<![\w])("
        + "|".join(r"\s+".join(map(re.escape, n.split())) for n in names)
        + r")(?!\w)",
        re.IGNORECASE,
    )
    # The nodes of the pages linking here already (rag's subquery).
    linking, linking_params = graph.edge_sources_sql(
        relation_type=REFERENCES, target_id=page.node_id or 0
    )
    items: list[LinkedItem] = []
    after: tuple[Any, int] | None = None
    batch = limit * 2
    while len(items) < limit:
        keyset = "AND (p.updated_at, p.id) < (%s, %s)" if after else ""
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT p.id, p.updated_at FROM content_page p
                WHERE p.account_id = %s AND p.id <> %s
                  AND p.words @@ ({words})
                  AND CASE
                      WHEN p.node_id IN ({linking}) THEN false
                      ELSE ts_match_vq(p.words, ({phrases})) AND p.content ~* %s
                  END
                  {keyset}
                ORDER BY p.updated_at DESC, p.id DESC
                LIMIT %s
                """,  # noqa: S608 - the placeholders are code
                [
                    page.account_id,
                    page.pk,
                    *names,
                    *linking_params,
                    *names,
                    _mention_pattern(names),
                    *(after or ()),
                    batch,
                ],
            )
            rows = cursor.fetchall()
        pages = Page.objects.defer("embedding").in_bulk([row[0] for row in rows])
        for page_id, _ in rows:
            found = pages.get(page_id)
            if found is None or _links_to(found.content, keys=keys, slug=page.slug):
                continue
            match = pattern.search(found.content)
            items.append(
                LinkedItem(
                    id=found.pk,
                    title=found.title,
                    slug=found.slug,
                    type="page",
                    excerpt=excerpt(found.content, at=match.start() if match else None),
                )
            )
            if len(items) == limit:
                break
        if len(rows) < batch:
            break
        after = (rows[-1][1], rows[-1][0])
    return items


def related(*, page: Page, limit: int = DEFAULT_RELATED) -> TimedHits[LinkedItem]:
    """The account's other pages and the published articles nearest ``page`` by the cosine
    similarity of their embeddings (clamped to 0..1), most similar first (``limit``: 1 to
    ``MAX_RELATED``), with the search's ``timings_ms``. The page must have an embedding
    (``content.services.page_embed``)."""
    top_k_check(limit, name="limit", maximum=MAX_RELATED)
    if page.embedding is None:
        return TimedHits()
    started = time.perf_counter()
    vector = np.asarray(page.embedding)
    distance = CosineDistance("embedding", vector)
    pages = (
        Page.objects.filter(account_id=page.account_id, embedding__isnull=False)
        .exclude(pk=page.pk)
        .annotate(distance=distance)
        .order_by("distance", "id")
        .only("id", "title", "slug", "content")[:limit]
    )
    articles = (
        article_list()
        .filter(embedding__isnull=False)
        .annotate(distance=distance)
        .order_by("distance", "id")
        .only("id", "title", "slug", "content")[:limit]
    )
    scored: list[tuple[float, int, LinkedItem]] = []
    for kind, rows in (("page", pages), ("article", articles)):
        for row in rows:
            similarity = min(1.0, max(0.0, 1.0 - float(row.distance)))
            scored.append(
                (
                    -similarity,
                    0 if kind == "page" else 1,
                    LinkedItem(
                        id=row.pk,
                        title=row.title,
                        slug=row.slug,
                        type=kind,  # type: ignore[arg-type]
                        excerpt=excerpt(row.content),
                        similarity=similarity,
                    ),
                )
            )
    scored.sort(key=lambda s: (s[0], s[1], s[2].id))
    elapsed = round((time.perf_counter() - started) * 1000, 3)
    return TimedHits([item for _, _, item in scored[:limit]], {"vector": elapsed})


def broken_links(*, page: Page) -> list[LinkedItem]:
    """The page's links that name no page of its account and no published article, in order of
    appearance (each target once), with an excerpt around the first."""
    links = wikilinks.parse(page.content)
    found = resolve(account_id=page.account_id, targets=[link.target for link in links])
    items: dict[str, LinkedItem] = {}
    for link in links:
        if link.target in found or link.target in items:
            continue
        items[link.target] = LinkedItem(
            id=None,
            title=link.target,
            slug=wikilinks.slugify(link.target),
            type=None,
            excerpt=excerpt(page.content, at=link.start),
            link_text=wikilinks.link_text(page.content, link),
        )
    return list(items.values())


# --- rot (memory's rot report; docs/memory/rot.md) ------------------------------------------------
Found = tuple[list[tuple[Page, Any]], int]


def broken_links_in_account(*, account_id: int, limit: int) -> Found:
    """Pages with wikilinks naming nothing (and those targets), at most ``limit``; how many."""
    pages = list(
        Page.objects.filter(account_id=account_id, content__contains="[[")
        .only("id", "title", "slug", "content", "account_id")
        .order_by("pk")
    )
    targets = {page.pk: [link.target for link in wikilinks.parse(page.content)] for page in pages}
    found = resolve(account_id=account_id, targets=[t for ts in targets.values() for t in ts])
    broken = [(p, list(dict.fromkeys(t for t in targets[p.pk] if t not in found))) for p in pages]
    broken = [(page, names) for page, names in broken if names]
    return broken[:limit], len(broken)


def stale_linked_pages(*, account_id: int, before: Any, limit: int) -> Found:
    """Pages other pages link to (with how many) unchanged since ``before``, least recently
    changed first, at most ``limit``, and how many there are."""
    page_nodes = Page.objects.filter(account_id=account_id, node__isnull=False).values("node_id")
    linkers = dict(
        graph.relation_edges(relation_type=REFERENCES, account_id=account_id)
        .filter(source_id__in=page_nodes)
        .exclude(source_id=F("target_id"))
        .values("target_id")
        .annotate(n=Count("source_id", distinct=True))
        .values_list("target_id", "n")
    )
    stale = Page.objects.filter(
        account_id=account_id, updated_at__lt=before, node_id__in=list(linkers)
    ).only("id", "title", "slug", "updated_at", "node_id", "account_id")
    found = [(p, linkers[p.node_id or 0]) for p in stale.order_by("updated_at", "pk")[:limit]]
    return found, stale.count()


def page_ids_existing(*, account_id: int, ids: Iterable[int]) -> set[int]:
    """Which of ``ids`` are pages of the account (the others were deleted, or never were)."""
    return set(
        Page.objects.filter(account_id=account_id, pk__in=list(ids)).values_list("pk", flat=True)
    )
