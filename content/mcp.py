"""Pages as MCP tools (docs/mcp.md): ``read_page``, ``write_page``, ``page_backlinks`` and
``search_pages``, over content's services and selectors. Pages are markdown; ``[[Title]]``
links another page (``[[Title|shown text]]``), and the linked page lists the linking one among
its backlinks once the link sync has run (in the background, on save)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from content import selectors, services
from content.apis import TITLE_MAX, BacklinkOutput, PageInput, PageOutput, PageSummaryOutput
from content.models import Status
from core import serializers as strict
from core.mcp import Call, CursorInput, Tool, page, paged
from rag.search import MAX_TOP_K, MODES
from rag.search_apis import StageExplanation


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

    content = serializers.CharField(allow_blank=True, trim_whitespace=False)
    aliases = serializers.ListField(
        child=serializers.CharField(max_length=300), max_length=50, required=False
    )
    status = serializers.ChoiceField(choices=Status.choices, required=False)


class SearchPagesInput(strict.InputSerializer):
    query = serializers.CharField(max_length=2000)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, default=10)
    mode = serializers.ChoiceField(choices=MODES, default="hybrid")


class WrittenPageOutput(serializers.Serializer):
    page = PageOutput()
    created = serializers.BooleanField(help_text="False: an existing page got the content.")


class PageExplanation(serializers.Serializer):
    vector = StageExplanation()
    keyword = StageExplanation()
    fused_score = strict.FiniteFloatField(allow_null=True)


class PageHitOutput(serializers.Serializer):
    page = PageSummaryOutput()
    score = strict.FiniteFloatField(allow_null=True)
    explanation = serializers.SerializerMethodField()

    @extend_schema_field(PageExplanation)
    def get_explanation(self, hit: selectors.PageHit) -> dict[str, Any]:
        r = hit.retrieval
        return dict(
            PageExplanation(
                {
                    "vector": {"rank": r["vector_rank"], "score": r["vector_score"]},
                    "keyword": {"rank": r["keyword_rank"], "score": r["keyword_score"]},
                    "fused_score": hit.score,
                }
            ).data
        )


class PageHitsOutput(serializers.Serializer):
    results = PageHitOutput(many=True)


def _ref(data: dict[str, Any]) -> dict[str, Any]:
    return {name: data[name] for name in ("page_id", "slug", "title") if name in data}


def _read(call: Call) -> dict[str, Any]:
    return dict(PageOutput(selectors.page_find(actor=call.actor, **_ref(call.data))).data)


def _write(call: Call) -> dict[str, Any]:
    written, created = services.page_write(actor=call.actor, **call.data)
    return dict(WrittenPageOutput({"page": written, "created": created}).data)


def _backlinks(call: Call) -> dict[str, Any]:
    target = selectors.page_find(actor=call.actor, **_ref(call.data))
    sources, cursor = page(selectors.backlinks(page=target), call.data)
    items = selectors.backlink_items(page=target, sources=sources)
    return {"results": BacklinkOutput(items, many=True).data, "next_cursor": cursor}


def _search(call: Call) -> dict[str, Any]:
    hits = selectors.page_search(actor=call.actor, **call.data)
    return dict(PageHitsOutput({"results": hits}).data)


TOOLS = (
    Tool(
        name="read_page",
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
        title="Write a page",
        description=(
            "Write a wiki page: the page with this `title` gets `content` (markdown; link "
            "other pages as [[Title]] or [[Title|shown text]]), or a new page is created (a "
            "draft unless `status` is published). Links become knowledge-graph edges and show "
            "as the linked pages' backlinks shortly after."
        ),
        scope="write",
        input=WritePageInput,
        output=WrittenPageOutput,
        run=_write,
        summary=lambda out: (
            ("Created" if out["created"] else "Updated") + f" page {out['page']['title']!r}."
        ),
        idempotent=True,
        hints={"content": "The whole text, in markdown with [[wikilinks]]; replaces the old."},
    ),
    Tool(
        name="page_backlinks",
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
        summary=lambda out: f"{len(out['results'])} pages.",
    ),
)
