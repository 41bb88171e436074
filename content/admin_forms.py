"""The forms of the pages' and articles' admin (``content/admin.py``): the markdown editor, aliases
as a list, the page, article and rename forms."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.postgres.forms import SimpleArrayField

from content.models import Article, Page

MARKDOWN_EDITOR = forms.Textarea(
    attrs={"rows": 24, "cols": 100, "class": "vLargeTextField", "style": "font-family: monospace"}
)


class MarkdownField(forms.CharField):
    """Markdown text as written, with the browser's CRLF line ends made LF (a form posted back
    unchanged is unchanged)."""

    def to_python(self, value: Any) -> str:
        text = super().to_python(value) or ""
        return text.replace("\r\n", "\n").replace("\r", "\n")


def _aliases_field() -> SimpleArrayField:
    return SimpleArrayField(
        forms.CharField(max_length=300),
        required=False,
        help_text="Other names that [[links]] and unlinked mentions match, separated by commas.",
    )


class PageForm(forms.ModelForm):
    content = MarkdownField(
        widget=MARKDOWN_EDITOR,
        required=False,
        strip=False,
        help_text="Markdown. Link pages with [[Title]] or [[Title|text]].",
    )
    aliases = _aliases_field()

    class Meta:
        model = Page
        fields = ["account", "title", "aliases", "status", "content"]


class ArticleForm(forms.ModelForm):
    content = MarkdownField(widget=MARKDOWN_EDITOR, required=False, strip=False)
    aliases = _aliases_field()

    class Meta:
        model = Article
        fields = ["title", "aliases", "status", "content"]


class RenameForm(forms.Form):
    title = forms.CharField(max_length=300, label="New title")
    rewrite_links = forms.BooleanField(
        required=False,
        initial=True,
        label="Rewrite the links naming the old title",
        help_text="[[Old title]] and [[Old title|text]] in this account's pages become "
        "[[New title]] and [[New title|text]], in the same change.",
    )
