"""Every write of pages and articles (``pages``) and their place in the knowledge graph
(``links``)."""

from content.services.links import (
    LinkReport,
    links_extract,
    page_embed,
    page_embed_current,
    page_sync,
)
from content.services.pages import (
    PAGE_UPDATABLE_FIELDS,
    Rename,
    article_delete,
    article_save,
    page_create,
    page_delete,
    page_link_mention,
    page_rename,
    page_update,
    page_write,
)

__all__ = [
    "PAGE_UPDATABLE_FIELDS",
    "LinkReport",
    "Rename",
    "article_delete",
    "article_save",
    "links_extract",
    "page_create",
    "page_delete",
    "page_embed",
    "page_embed_current",
    "page_link_mention",
    "page_rename",
    "page_sync",
    "page_update",
    "page_write",
]
