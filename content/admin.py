"""Pages and articles for authors (docs/admin.md).

Pages are an account's: everyone in the account reads them, authors (and owners) write them,
always through ``content.services``. A page's form shows what the knowledge graph knows of it:
backlinks, unlinked mentions (each with "link it", which makes the first plain mention in the
other page a wikilink), related pages, broken links, and the page rendered (sanitised) with its
wikilinks as links to their pages. Renaming can rewrite the links that name the old title.

Articles are global (every account reads the published ones): superusers and the installation
operators group write them, through the article services. The forms are ``content.admin_forms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.safestring import SafeString, mark_safe

from content import (
    admin_home,  # noqa: F401  # registers the panels of the admin home
    rendering,
    selectors,
    services,
)
from content.admin_forms import ArticleForm, PageForm, RenameForm
from content.models import Article, Page, Status
from core.actors import READ, WRITE_CONTENT, Actor
from core.admin_base import (
    AccountScopedAdmin,
    InstallationAdminMixin,
    ServiceRefusalsMixin,
    request_actor,
    scoped_delete_selected,
)
from core.errors import EngramError
from rag.graph import drawing as graph_drawing

MAX_BACKLINKS_SHOWN = 50
RELATED_SHOWN = selectors.DEFAULT_RELATED


class WrittenByFilter(admin.SimpleListFilter):
    """Pages by who wrote them (no list of users: that would name other accounts' people)."""

    title = "written by"
    parameter_name = "written_by"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [("me", "Me"), ("people", "People"), ("agents", "Agents")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "me":
            return queryset.filter(author_id=request.user.pk)
        if value == "people":
            return queryset.filter(author__isnull=False)
        if value == "agents":
            return queryset.filter(author_agent__isnull=False)
        return queryset


@dataclass
class Entry:
    """One line of a panel: the item the selector found and where it leads."""

    item: selectors.LinkedItem
    href: str | None = None
    action: str | None = None  # "link it" (a POST) for unlinked mentions


@dataclass
class Panels:
    backlinks: list[Entry] = field(default_factory=list)
    more_backlinks: int = 0
    mentions: list[Entry] = field(default_factory=list)
    related: list[Entry] = field(default_factory=list)
    related_note: str = ""
    broken: list[Entry] = field(default_factory=list)
    preview: SafeString = field(default_factory=lambda: mark_safe(""))


# Set on a request whose page embedding could not be brought up to date (no provider).
_EMBEDDING_NOTE_ATTR = "_engram_page_embedding_note"


def _page_admin_links(node_ids: list[int]) -> dict[int, str]:
    """Page nodes of the admin's graph drawings open the page's own admin page."""
    pages = Page.objects.filter(node_id__in=node_ids).values_list("pk", "node_id")
    return {node_id: reverse("admin:content_page_change", args=[pk]) for pk, node_id in pages}


graph_drawing.admin_link_register("page", _page_admin_links)


@admin.register(Page)
class PageAdmin(AccountScopedAdmin):
    view_roles = READ
    add_roles = change_roles = delete_roles = WRITE_CONTENT
    form = PageForm
    list_display = ["title", "status", "updated_at", "written_by", "account"]
    list_filter = ["status", WrittenByFilter, "account"]
    list_select_related = ["author", "author_agent", "account"]
    list_defer = ("embedding",)
    search_fields = ["title"]  # and the text, by its full-text index (get_search_results)
    search_help_text = "Titles containing the words, or pages whose text has all of them."
    _editable = ["account", "title", "aliases", "status", "content"]
    _derived = ["slug", "written_by", "embedding_model", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._editable if obj is None else [*self._editable, *self._derived]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        return fields if obj is None else [*fields, *self._derived]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Page]:
        queryset = super().get_queryset(request)
        match = request.resolver_match
        if match is not None and (match.url_name or "").endswith("_changelist"):
            queryset = queryset.defer("content")  # lists never read the texts
        return queryset

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial: dict[str, Any] = super().get_changeform_initial_data(request)
        writable = self.writable(request)
        if "account" not in initial and writable is not None and len(writable) == 1:
            initial["account"] = next(iter(writable))
        return initial

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        in_text = Page.objects.filter(words=SearchQuery(term, config="simple")).values("pk")
        return queryset.filter(Q(title__icontains=term) | Q(pk__in=in_text)), False

    @admin.display(description="author")
    def written_by(self, obj: Page) -> str:
        if obj.author_id is not None and obj.author is not None:
            return str(obj.author.get_username())
        if obj.author_agent_id is not None and obj.author_agent is not None:
            return f"{obj.author_agent.name} (agent)"
        return "-"

    # --- writes through the services --------------------------------------------------------

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> Page:
        data = form.cleaned_data
        return services.page_create(
            actor=actor,
            account_id=data["account"].pk,
            title=data["title"],
            content=data["content"],
            aliases=data["aliases"] or [],
            status=data["status"],
        )

    def service_update(self, request: HttpRequest, actor: Actor, original: Page, form: Any) -> None:
        changes = self.changed(form, services.PAGE_UPDATABLE_FIELDS)
        if changes:
            services.page_update(actor=actor, page=original, fields=changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Page) -> None:
        services.page_delete(actor=actor, page=obj)

    # --- the panels of the change form -------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method == "GET":
            # Related pages need the embedding of the page's current text: computed here, before
            # the form view's transaction (never call a provider inside one).
            page = self.get_object(request, unquote(object_id))
            if page is not None and self.has_view_permission(request, page):
                try:
                    services.page_embed_current(page=page)
                except EngramError as exc:
                    setattr(request, _EMBEDDING_NOTE_ATTR, exc.message)
        return super().change_view(request, object_id, form_url, extra_context)

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> Any:
        if change and obj is not None:
            context["content_panels"] = self.panels(request, obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _url_of(self, request: HttpRequest, item: selectors.LinkedItem) -> str | None:
        if item.id is None:
            return None
        if item.type == "article":
            article_admin = self.admin_site._registry.get(Article)
            if article_admin is None or not article_admin.has_view_permission(request):
                return None
            return reverse("admin:content_article_change", args=[item.id])
        return reverse("admin:content_page_change", args=[item.id])

    def _create_url(self, request: HttpRequest, page: Page, title: str) -> str | None:
        if not self.has_add_permission(request):
            return None
        query = urlencode({"title": title, "account": page.account_id})
        return f"{reverse('admin:content_page_add')}?{query}"

    def panels(self, request: HttpRequest, page: Page) -> Panels:
        """What the graph knows of ``page`` (a page the person may view), for the form."""
        panels = Panels()
        sources = selectors.backlinks(page=page)
        shown = list(sources[:MAX_BACKLINKS_SHOWN])
        if len(shown) == MAX_BACKLINKS_SHOWN:
            panels.more_backlinks = sources.count() - MAX_BACKLINKS_SHOWN
        panels.backlinks = [
            Entry(item, self._url_of(request, item))
            for item in selectors.backlink_items(page=page, sources=shown)
        ]
        may_link = self.has_change_permission(request, page)
        panels.mentions = [
            Entry(
                item,
                self._url_of(request, item),
                reverse("admin:content_page_link_mention", args=[page.pk, item.id])
                if may_link
                else None,
            )
            for item in selectors.unlinked_mentions(page=page)
        ]
        current = Page.objects.filter(pk=page.pk).only("id", "account_id", "embedding").first()
        if current is not None and current.embedding is not None:
            panels.related = [
                Entry(item, self._url_of(request, item))
                for item in selectors.related(page=current, limit=RELATED_SHOWN)
            ]
        else:
            panels.related_note = getattr(
                request, _EMBEDDING_NOTE_ATTR, "The page has no embedding yet."
            )
        panels.broken = [
            Entry(item, self._create_url(request, page, item.title))
            for item in selectors.broken_links(page=page)
        ]
        panels.preview = mark_safe(  # noqa: S308 - sanitised by nh3 (content.rendering)
            rendering.render(
                page.content, links=lambda targets: self._links(request, page, targets)
            )
        )
        return panels

    def _links(
        self, request: HttpRequest, page: Page, targets: Any
    ) -> dict[str, rendering.LinkTarget]:
        found = selectors.resolve(account_id=page.account_id, targets=targets)
        links: dict[str, rendering.LinkTarget] = {}
        for target in targets:
            resolved = found.get(target)
            if resolved is None:
                links[target] = rendering.LinkTarget(
                    href=self._create_url(request, page, target),
                    broken=True,
                    title="No page or article has this title: create the page.",
                )
                continue
            item = selectors.LinkedItem(
                id=resolved.id, title="", slug="", type=resolved.kind, excerpt=""
            )
            named = resolved.page if resolved.page is not None else resolved.article
            links[target] = rendering.LinkTarget(
                href=self._url_of(request, item),
                title=f"{resolved.kind}: {named.title if named is not None else target}",
            )
        return links

    # --- rename and "link it" ----------------------------------------------------------------

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/rename/",
                view(self.rename_view),
                name="content_page_rename",
            ),
            path(
                "<path:object_id>/link-mention/<id:source_id>/",
                view(self.link_mention_view),
                name="content_page_link_mention",
            ),
            *super().get_urls(),
        ]

    def _change_url(self, page: Page) -> str:
        return reverse("admin:content_page_change", args=[page.pk])

    def rename_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A new title; with "rewrite links" (the default) the links naming the old one follow
        (``content.services.page_rename``, one transaction)."""
        page = self.get_object(request, unquote(object_id))
        if page is None or not self.has_view_permission(request, page):
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, page):
            raise PermissionDenied
        form = RenameForm(
            request.POST if request.method == "POST" else None,
            initial={"title": page.title, "rewrite_links": True},
        )
        if request.method == "POST" and form.is_valid():
            try:
                renamed = services.page_rename(
                    actor=self.actor(request),
                    page=page,
                    title=form.cleaned_data["title"],
                    rewrite_links=form.cleaned_data["rewrite_links"],
                )
            except EngramError as exc:
                form.add_error("title", exc.message)
            else:
                self.log_change(request, renamed.page, f"Renamed from “{renamed.old_title}”.")
                others = [r for r in renamed.rewritten if r.page.pk != page.pk]
                messages.success(
                    request,
                    f"Renamed “{renamed.old_title}” to “{renamed.new_title}”; rewrote "
                    f"{renamed.links_rewritten} link(s) in {len(others)} other page(s).",
                )
                return HttpResponseRedirect(self._change_url(page))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": page,
            "title": f"Rename “{page.title}”",
            "form": form,
            "backlinks": selectors.backlinks(page=page).count(),
            "has_view_permission": True,
        }
        return TemplateResponse(request, "admin/content/page/rename.html", context)

    def link_mention_view(self, request: HttpRequest, object_id: str, source_id: int) -> Any:
        """The "link it" button: the first plain mention of this page in page ``source_id``
        becomes a wikilink to it (``content.services.page_link_mention``); back to the form."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        target = self.get_object(request, unquote(object_id))
        source = self.get_queryset(request).filter(pk=source_id).first()
        if target is None or source is None or not self.has_view_permission(request, target):
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, source):
            raise PermissionDenied
        try:
            services.page_link_mention(actor=self.actor(request), page=source, target=target)
        except EngramError as exc:
            messages.error(request, f"{source}: {exc.message}")
        else:
            self.log_change(request, source, f"Linked the mention of “{target.title}”.")
            messages.success(request, f"Linked “{target.title}” in “{source.title}”.")
        return HttpResponseRedirect(self._change_url(target))


@admin.register(Article)
class ArticleAdmin(InstallationAdminMixin, ServiceRefusalsMixin, admin.ModelAdmin):
    """Knowledge-base articles: global, so installation-wide (superusers and the installation
    operators group); written through ``content.services.article_save``/``article_delete``."""

    form = ArticleForm
    list_display = ["title", "status", "updated_at", "author"]
    list_filter = ["status"]
    list_select_related = ["author"]
    search_fields = ["title"]
    _editable = ["title", "aliases", "status", "content"]
    _derived = ["slug", "author", "embedding_model", "created_at", "updated_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Article]:
        return super().get_queryset(request).defer("embedding")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._editable if obj is None else [*self._editable, *self._derived]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else self._derived

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        # Nobody else learns whether an article exists: missing and present both answer 403.
        if not self._allowed(request):
            return None
        return super().get_object(request, object_id, from_field)

    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> HttpResponse:
        if not self._allowed(request):
            raise PermissionDenied
        context = {**self.admin_site.each_context(request), "title": "Page not found"}
        return TemplateResponse(request, "admin/404.html", context, status=404)

    def save_model(self, request: HttpRequest, obj: Article, form: Any, change: bool) -> None:
        actor = request_actor(request)
        if change:
            original = self.get_queryset(request).filter(pk=obj.pk).first()
            if original is None:
                raise selectors.article_not_found()
            changes = {
                name: form.cleaned_data[name]
                for name in form.changed_data
                if name in services.PAGE_UPDATABLE_FIELDS
            }
            if changes:
                services.article_save(actor=actor, article=original, fields=changes)
            return
        data = form.cleaned_data
        created = services.article_save(
            actor=actor,
            article=None,
            fields={
                "title": data["title"],
                "content": data["content"],
                "aliases": data["aliases"] or [],
                "status": data["status"] or Status.DRAFT,
            },
        )
        obj.pk = created.pk
        obj._state.adding = False

    def get_actions(self, request: HttpRequest) -> Any:
        actions: dict[str, Any] = super().get_actions(request)
        if actions.get("delete_selected") is not None:
            _, name, description = actions["delete_selected"]
            actions["delete_selected"] = (scoped_delete_selected, name, description)
        return actions

    def delete_model(self, request: HttpRequest, obj: Article) -> None:
        services.article_delete(actor=request_actor(request), article=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Article]) -> None:
        actor = request_actor(request)
        deleted = 0
        for article in queryset:
            try:
                services.article_delete(actor=actor, article=article)
            except EngramError as exc:
                messages.error(request, f"{article}: {exc.message}")
            else:
                deleted += 1
        if deleted:
            messages.success(request, f"Deleted {deleted} article(s).")
