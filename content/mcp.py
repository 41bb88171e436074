"""Pages as MCP tools (docs/mcp.md): ``read_page``, ``write_page``, ``page_backlinks`` and
``search_pages``, over content's services and selectors. Pages are markdown; ``[[Title]]``
links another page (``[[Title|shown text]]``), and the linked page lists the linking one among
its backlinks once the link sync has run (in the background, on save)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from content import selectors, services
from content.apis import (
    TITLE_MAX,
    BacklinkOutput,
    PageHitsOutput,
    PageInput,
    PageListApi,
    PageOutput,
    page_content_field,
    page_search_answer,
)
from content.models import Status
from core import serializers as strict
from core.mcp import Call, CursorInput, Tool, page, paged


class PageRefInput(strict.InputSerializer):
    """Which page: exactly one of its id, its slug or its title."""

    page_id = strict.IdField(required=False, help_text="The page's id.")
    slug = serializers.CharField(required=False, max_length=TITLE_MAX, help_text="Its slug.")
    title = serializers.CharField(
        required=False,
        max_length=TITLE_MAX,
        help_text="Its title (any case) or one of its aliases, as a [[wikilink]] names it.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if sum(name in attrs for name in ("page_id", "slug", "title")) != 1:
            raise serializers.ValidationError("Give exactly one of page_id, slug or title.")
        return attrs


class BacklinksInput(PageRefInput, CursorInput):
    pass


class WritePageInput(PageInput):
    """``POST /content/pages``'s fields; aliases and status kept as they are unless given."""

    content = page_content_field()
    aliases = serializers.ListField(
        child=serializers.CharField(max_length=300), max_length=50, required=False
    )
    status = serializers.ChoiceField(choices=Status.choices, required=False)


class SearchPagesInput(strict.InputSerializer):
    """``GET /content/pages``'s search parameters, ``query`` required."""

    query = strict.SearchQueryField(help_text="What to look for, e.g. harbour cranes.")
    top_k = PageListApi.FilterSerializer._declared_fields["top_k"]
    mode = PageListApi.FilterSerializer._declared_fields["mode"]


def _ref(data: dict[str, Any]) -> dict[str, Any]:
    return {name: data[name] for name in ("page_id", "slug", "title") if name in data}


def _read(call: Call) -> dict[str, Any]:
    return dict(PageOutput(selectors.page_find(actor=call.actor, **_ref(call.data))).data)


def _write(call: Call) -> dict[str, Any]:
    written, _ = services.page_write(actor=call.actor, **call.data)
    return dict(PageOutput(written).data)


def _backlinks(call: Call) -> dict[str, Any]:
    target = selectors.page_find(actor=call.actor, **_ref(call.data))
    sources, cursor = page(selectors.backlinks(page=target), call.data)
    items = selectors.backlink_items(page=target, sources=sources)
    return {"results": BacklinkOutput(items, many=True).data, "next_cursor": cursor}


def _search(call: Call) -> dict[str, Any]:
    return page_search_answer(call.actor, call.data)


TOOLS = (
    Tool(
        name="read_page",
        rest="GET /api/v1/content/pages/{page_id}",
        title="Read a page",
        description=(
            "Read a wiki page of the account (markdown, with [[wikilinks]] to other pages) by "
            "`page_id`, `slug` or `title` (a title also matches the page's aliases, as a link "
            "does). A missing page is the error page_not_found."
        ),
        scope="read",
        input=PageRefInput,
        output=PageOutput,
        run=_read,
        summary=lambda out: f"Page {out['title']!r} ({out['status']}).",
    ),
    Tool(
        name="write_page",
        rest="POST /api/v1/content/pages",
        title="Write a page",
        description=(
            "Write a wiki page: the page with this `title` gets `content` (markdown; link "
            "other pages as [[Title]] or [[Title|shown text]]), or a new page is created (a "
            "draft unless `status` is published). Links become knowledge-graph edges and show "
            "as the linked pages' backlinks shortly after. Answers the page as "
            "POST /content/pages does."
        ),
        scope="write",
        input=WritePageInput,
        output=PageOutput,
        run=_write,
        summary=lambda out: f"Page {out['title']!r} ({out['status']}, id {out['id']}).",
        idempotent=True,
        hints={
            "title": "The page's title; [[Title]] links to it, e.g. Harbour cranes.",
            "aliases": 'Other names [[links]] may use, e.g. ["cranes"].',
            "status": "draft (default for a new page) or published.",
            "content": "The whole text, in markdown with [[wikilinks]]; replaces the old.",
        },
        examples={
            "content": "Plant tomatoes out after the last frost ([[Frost dates]]).",
            "title": "Tomatoes",
        },
    ),
    Tool(
        name="page_backlinks",
        rest="GET /api/v1/content/pages/{page_id}/backlinks",
        title="A page's backlinks",
        description=(
            "The pages whose [[links]] reach a page (by `page_id`, `slug` or `title`), most "
            "recently created first, each with an excerpt around its link. Paged: pass "
            "`next_cursor` back as `cursor` for more."
        ),
        scope="read",
        input=BacklinksInput,
        output=paged(BacklinkOutput),
        run=_backlinks,
        summary=lambda out: f"{len(out['results'])} backlinks.",
    ),
    Tool(
        name="search_pages",
        rest="GET /api/v1/content/pages?query=",
        title="Search pages",
        description=(
            "Find the account's wiki pages matching `query` by title, aliases and the start "
            "of their text (hybrid semantic and keyword search by default), best first, each "
            "explained. Read one with read_page."
        ),
        scope="read",
        input=SearchPagesInput,
        output=PageHitsOutput,
        run=_search,
        hints={
            "query": "What to look for, e.g. harbour cranes.",
            "top_k": "How many pages, 1 to 100 (default 10).",
            "mode": "hybrid (default), vector, keyword or prf.",
        },
        summary=lambda out: f"{len(out['results'])} pages.",
    ),
)
