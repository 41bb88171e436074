"""Pages and articles HTTP API (``/api/v1/content/``): one view per operation, thin over
``content.services`` and ``content.selectors``. Agents write pages with the ``write`` scope (an
author's rights); every account reads the published articles."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from content import selectors, services
from content.models import Article, Page, Status
from core import serializers as strict
from core.pagination import CreatedCursorPagination, page_parameters_check, paginated_response
from core.permissions import request_actor
from core.views import ApiView
from rag.search import MODES
from rag.search_apis import StageExplanation


class PageOutput(serializers.ModelSerializer[Page]):
    class Meta:
        model = Page
        fields = [
            "id",
            "title",
            "slug",
            "content",
            "aliases",
            "status",
            "author_id",
            "author_agent_id",
            "node_id",
            "embedding_model",
            "created_at",
            "updated_at",
        ]


class PageSummaryOutput(serializers.ModelSerializer[Page]):
    excerpt = serializers.SerializerMethodField()

    class Meta:
        model = Page
        fields = ["id", "title", "slug", "aliases", "status", "excerpt", "created_at", "updated_at"]

    def get_excerpt(self, page: Page) -> str:
        return selectors.excerpt(page.content)


class ArticleOutput(serializers.ModelSerializer[Article]):
    class Meta:
        model = Article
        fields = ["id", "title", "slug", "content", "aliases", "status", "created_at", "updated_at"]


class ArticleSummaryOutput(serializers.ModelSerializer[Article]):
    excerpt = serializers.SerializerMethodField()

    class Meta:
        model = Article
        fields = ["id", "title", "slug", "aliases", "excerpt", "created_at", "updated_at"]

    def get_excerpt(self, article: Article) -> str:
        return selectors.excerpt(article.content)


TITLE_MAX = services.MAX_TITLE_CHARS


def _aliases(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=300), max_length=50, **kwargs
    )


def page_content_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """A page's markdown: at most ``MAX_CONTENT_CHARS`` characters (413 ``content_too_long``,
    from the service)."""
    return strict.ServiceBoundedCharField(
        max_length=services.MAX_CONTENT_CHARS,
        allow_blank=True,
        trim_whitespace=False,
        **kwargs,
    )


class PageInput(strict.InputSerializer):
    title = serializers.CharField(max_length=TITLE_MAX)
    content = page_content_field(required=False, default="")
    aliases = _aliases(required=False, default=list)
    status = serializers.ChoiceField(choices=Status.choices, default=Status.DRAFT)


class PageUpdateInput(strict.InputSerializer):
    title = serializers.CharField(required=False, max_length=TITLE_MAX)
    content = page_content_field(required=False)
    aliases = _aliases(required=False)
    status = serializers.ChoiceField(choices=Status.choices, required=False)


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
    """A search's answer: the mode it ran with (which a list's page has not), then the pages
    found. The query is not echoed: an answer holds only what the account's data gave."""

    mode = serializers.CharField(help_text="The search mode that ran.")
    results = PageHitOutput(many=True)


class PageListPageOutput(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PageSummaryOutput(many=True)


def page_search_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``GET /content/pages?query=``'s answer (and MCP ``search_pages``')."""
    hits = selectors.page_search(
        actor=actor, query=data["query"], top_k=data["top_k"], mode=data["mode"]
    )
    answer = {"mode": data["mode"], "results": hits}
    return dict(PageHitsOutput(answer).data)


class PageListApi(ApiView):
    """Without ``query``: the account's pages, most recently created first, paged. With
    ``query``: the pages best matching it by title, aliases and the start of their text, each
    explained (the search over their graph nodes)."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        status = serializers.ChoiceField(
            choices=Status.choices, required=False, help_text="Lists only: pages of this status."
        )
        query = strict.SearchQueryField(
            required=False, help_text="Search: what to look for, e.g. harbour cranes."
        )
        top_k = strict.TopKField(help_text="Search: how many pages, 1 to 100 (default 10).")
        mode = serializers.ChoiceField(
            choices=MODES,
            default="hybrid",
            help_text="Search: hybrid (default), vector, keyword or prf.",
        )

    @extend_schema(
        parameters=[FilterSerializer],
        responses=PolymorphicProxySerializer(
            component_name="PagesOrHits",
            serializers=[PageListPageOutput, PageHitsOutput],
            resource_type_field_name=None,
        ),
        operation_id="content_pages_list",
    )
    def get(self, request: Request) -> Response:
        if self.filters.get("query") is not None:
            page_parameters_check(self.pagination_class, request)
            return Response(page_search_answer(request_actor(request), self.filters))
        pages = selectors.page_list(actor=request_actor(request))
        if "status" in self.filters:
            pages = pages.filter(status=self.filters["status"])
        return paginated_response(self, request, pages, PageSummaryOutput)

    @extend_schema(
        request=PageInput, responses={201: PageOutput}, operation_id="content_page_create"
    )
    def post(self, request: Request) -> Response:
        data = PageInput(data=request.data)
        data.is_valid(raise_exception=True)
        page = services.page_create(actor=request_actor(request), **data.validated_data)
        return Response(PageOutput(page).data, status=status.HTTP_201_CREATED)


class PageDetailApi(ApiView):
    @extend_schema(responses=PageOutput, operation_id="content_page_retrieve")
    def get(self, request: Request, page_id: int) -> Response:
        page = selectors.page_get(actor=request_actor(request), page_id=page_id)
        return Response(PageOutput(page).data)

    @extend_schema(
        request=PageUpdateInput, responses=PageOutput, operation_id="content_page_update"
    )
    def patch(self, request: Request, page_id: int) -> Response:
        actor = request_actor(request)
        page = selectors.page_get(actor=actor, page_id=page_id)
        data = PageUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        page = services.page_update(actor=actor, page=page, fields=data.validated_data)
        return Response(PageOutput(page).data)

    @extend_schema(responses={204: None}, operation_id="content_page_delete")
    def delete(self, request: Request, page_id: int) -> Response:
        actor = request_actor(request)
        page = selectors.page_get(actor=actor, page_id=page_id)
        services.page_delete(actor=actor, page=page)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- link panels -----------------------------------------------------------------------------


CONTENT_TYPES = ["page", "article"]


class LinkedItemOutput(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True)
    title = serializers.CharField()
    slug = serializers.CharField()
    type = serializers.ChoiceField(choices=CONTENT_TYPES, allow_null=True)
    excerpt = serializers.CharField(allow_blank=True)


class BacklinkOutput(LinkedItemOutput):
    link_text = serializers.CharField(
        allow_null=True, help_text="The link as written in the linking page."
    )


class MentionsOutput(serializers.Serializer):
    results = LinkedItemOutput(many=True)


class RelatedItemOutput(LinkedItemOutput):
    similarity = strict.FiniteFloatField(help_text="Cosine similarity of the texts, 0 to 1.")


class RelatedOutput(serializers.Serializer):
    results = RelatedItemOutput(many=True)
    timings_ms = strict.TimingsField()


class BrokenLinkOutput(LinkedItemOutput):
    link_text = serializers.CharField(help_text="The link as written.")


class BrokenLinksOutput(serializers.Serializer):
    results = BrokenLinkOutput(many=True)


class BacklinksApi(ApiView):
    """The account's pages whose ``[[links]]`` reach this page, most recently created first,
    paged; each with an excerpt around its link."""

    pagination_class = CreatedCursorPagination

    @extend_schema(responses=BacklinkOutput(many=True), operation_id="content_page_backlinks")
    def get(self, request: Request, page_id: int) -> Response:
        page = selectors.page_get(actor=request_actor(request), page_id=page_id)
        paginator = self.pagination_class()
        sources = paginator.paginate_queryset(selectors.backlinks(page=page), request, self)
        items = selectors.backlink_items(page=page, sources=sources or [])
        return paginator.get_paginated_response(BacklinkOutput(items, many=True).data)


class UnlinkedMentionsApi(ApiView):
    """The account's other pages that name this page (its title or an alias, as whole words,
    any case) without linking to it: at most 20, most recently changed first."""

    @extend_schema(responses=MentionsOutput, operation_id="content_page_unlinked_mentions")
    def get(self, request: Request, page_id: int) -> Response:
        page = selectors.page_get(actor=request_actor(request), page_id=page_id)
        return Response(MentionsOutput({"results": selectors.unlinked_mentions(page=page)}).data)


class RelatedApi(ApiView):
    """The account's pages and the published articles most similar to this page by embedding,
    with their similarity (0 to 1). The page's embedding is computed first if it is missing or
    stale."""

    class FilterSerializer(strict.FilterSerializer):
        limit = strict.TopKField(max_value=selectors.MAX_RELATED, default=selectors.DEFAULT_RELATED)

    @extend_schema(
        parameters=[FilterSerializer], responses=RelatedOutput, operation_id="content_page_related"
    )
    def get(self, request: Request, page_id: int) -> Response:
        page = selectors.page_get(actor=request_actor(request), page_id=page_id)
        page = services.page_embed_current(page=page)
        found = selectors.related(page=page, limit=self.filters["limit"])
        return Response(RelatedOutput({"results": found, "timings_ms": found.timings_ms}).data)


class BrokenLinksApi(ApiView):
    """The page's ``[[links]]`` that name no page of the account and no published article."""

    @extend_schema(responses=BrokenLinksOutput, operation_id="content_page_broken_links")
    def get(self, request: Request, page_id: int) -> Response:
        page = selectors.page_get(actor=request_actor(request), page_id=page_id)
        return Response(BrokenLinksOutput({"results": selectors.broken_links(page=page)}).data)


class LinkReportOutput(serializers.Serializer):
    links = serializers.IntegerField(help_text="Wikilinks in the text, repeats included.")
    resolved = serializers.IntegerField(help_text="Distinct pages and articles they name.")
    created = serializers.IntegerField(help_text="references edges added.")
    removed = serializers.IntegerField(help_text="references edges removed.")
    updated = serializers.IntegerField(help_text="references edges whose link text changed.")
    broken = serializers.ListField(child=serializers.CharField(), help_text="Unresolved targets.")


class ExtractLinksApi(ApiView):
    """Re-extract the page's links now: its outgoing ``references`` edges become exactly its
    current resolved links (saving a page does this in the background)."""

    @extend_schema(
        request=None, responses=LinkReportOutput, operation_id="content_page_extract_links"
    )
    def post(self, request: Request, page_id: int) -> Response:
        actor = request_actor(request)
        page = selectors.page_get(actor=actor, page_id=page_id)
        report = services.links_extract(actor=actor, page=page)
        return Response(LinkReportOutput(report).data)


class GenerateEmbeddingApi(ApiView):
    """Recompute the page's embedding now (related pages are found by it)."""

    @extend_schema(
        request=None, responses=PageOutput, operation_id="content_page_generate_embedding"
    )
    def post(self, request: Request, page_id: int) -> Response:
        actor = request_actor(request)
        page = selectors.page_get(actor=actor, page_id=page_id)
        page = services.page_embed(actor=actor, page=page)
        return Response(PageOutput(page).data)


class RenameInput(strict.InputSerializer):
    title = serializers.CharField(max_length=TITLE_MAX)
    rewrite_links = serializers.BooleanField(default=True)


class RewrittenOutput(serializers.Serializer):
    id = serializers.IntegerField(source="page.pk")
    title = serializers.CharField(source="page.title")
    slug = serializers.CharField(source="page.slug")
    links = serializers.IntegerField(help_text="Links rewritten in this page.")


class RenameOutput(serializers.Serializer):
    page = PageOutput()
    old_title = serializers.CharField()
    new_title = serializers.CharField()
    links_rewritten = serializers.IntegerField()
    rewritten = RewrittenOutput(many=True)


class RenameApi(ApiView):
    """Give the page a new title; with ``rewrite_links`` (default), the account's links naming
    the old title become links to the new one, in one transaction."""

    @extend_schema(request=RenameInput, responses=RenameOutput, operation_id="content_page_rename")
    def post(self, request: Request, page_id: int) -> Response:
        actor = request_actor(request)
        page = selectors.page_get(actor=actor, page_id=page_id)
        data = RenameInput(data=request.data)
        data.is_valid(raise_exception=True)
        renamed = services.page_rename(actor=actor, page=page, **data.validated_data)
        return Response(RenameOutput(renamed).data)


# --- articles --------------------------------------------------------------------------------


class ArticleListApi(ApiView):
    """The published knowledge-base articles (global: the same for every account), newest
    first, paged."""

    pagination_class = CreatedCursorPagination

    @extend_schema(responses=ArticleSummaryOutput(many=True), operation_id="content_articles_list")
    def get(self, request: Request) -> Response:
        request_actor(request)
        return paginated_response(self, request, selectors.article_list(), ArticleSummaryOutput)


class ArticleDetailApi(ApiView):
    @extend_schema(responses=ArticleOutput, operation_id="content_article_retrieve")
    def get(self, request: Request, article_id: int) -> Response:
        request_actor(request)
        return Response(ArticleOutput(selectors.article_get(article_id=article_id)).data)
