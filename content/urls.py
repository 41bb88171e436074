from django.urls import path

from content import apis

urlpatterns = [
    path("pages", apis.PageListApi.as_view(), name="page-list"),
    path("pages/<id:page_id>", apis.PageDetailApi.as_view(), name="page-detail"),
    path("pages/<id:page_id>/backlinks", apis.BacklinksApi.as_view(), name="page-backlinks"),
    path(
        "pages/<id:page_id>/unlinked-mentions",
        apis.UnlinkedMentionsApi.as_view(),
        name="page-unlinked-mentions",
    ),
    path("pages/<id:page_id>/related", apis.RelatedApi.as_view(), name="page-related"),
    path(
        "pages/<id:page_id>/broken-links", apis.BrokenLinksApi.as_view(), name="page-broken-links"
    ),
    path(
        "pages/<id:page_id>/extract-links",
        apis.ExtractLinksApi.as_view(),
        name="page-extract-links",
    ),
    path(
        "pages/<id:page_id>/generate-embedding",
        apis.GenerateEmbeddingApi.as_view(),
        name="page-generate-embedding",
    ),
    path("pages/<id:page_id>/rename", apis.RenameApi.as_view(), name="page-rename"),
    path("articles", apis.ArticleListApi.as_view(), name="article-list"),
    path("articles/<id:article_id>", apis.ArticleDetailApi.as_view(), name="article-detail"),
]
