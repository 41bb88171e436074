"""Markdown to sanitised HTML, with wikilinks as links: the authors' preview in the admin.

CommonMark (plus tables and strikethrough) by markdown-it-py; ``[[Title]]``,
``[[Title|text]]`` and ``[[Title#Heading]]`` are parsed by an inline rule of the parser, so code
spans, code blocks and backslash escapes keep them literal exactly where markdown does. What each
link points at is the caller's to say (``links``); the HTML, raw HTML of the text included, is
then cleaned by nh3 (ammonia): no scripts, styles, event handlers or ``javascript:`` URLs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from html import escape
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from content import wikilinks

URL_SCHEMES = frozenset({"http", "https", "mailto"})
WIKILINK_CLASSES = frozenset({"wikilink", "broken"})


@dataclass(frozen=True)
class LinkTarget:
    """Where a wikilink goes: ``href`` (None: nowhere to go), ``broken`` when it names nothing,
    ``title`` as the link's tooltip."""

    href: str | None
    broken: bool = False
    title: str = ""


# Resolves the distinct link targets of a text at once; a target left out is a broken link.
Links = Callable[[Sequence[str]], Mapping[str, LinkTarget]]


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("[[", state.pos):
        return False
    link = wikilinks.match_at(state.src, state.pos)
    if link is None:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.meta = {"target": link.target, "display": link.display, "anchor": link.anchor}
    state.pos = link.end
    return True


def _render_wikilink(
    renderer: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]
) -> str:
    meta = tokens[idx].meta
    text = meta["display"] or (
        f"{meta['target']} › {meta['anchor']}" if meta["anchor"] else meta["target"]
    )
    found: LinkTarget | None = env["wikilinks"].get(meta["target"])
    if found is None:
        found = LinkTarget(href=None, broken=True, title="No page or article has this title.")
    classes = "wikilink broken" if found.broken else "wikilink"
    tooltip = f' title="{escape(found.title)}"' if found.title else ""
    if found.href is None:
        return f'<span class="{classes}"{tooltip}>{escape(text)}</span>'
    return f'<a class="{classes}" href="{escape(found.href)}"{tooltip}>{escape(text)}</a>'


@cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    parser.inline.ruler.before("link", "wikilink", _wikilink_rule)
    parser.add_render_rule("wikilink", _render_wikilink)
    return parser


def _targets(tokens: Iterable[Token]) -> list[str]:
    found: dict[str, None] = {}
    for token in tokens:
        if token.type == "wikilink":
            found[token.meta["target"]] = None
        if token.children:
            found.update(dict.fromkeys(_targets(token.children)))
    return list(found)


def sanitise(html: str) -> str:
    """Only harmless HTML: nh3's default tags and attributes, links to http(s) and mailto (and
    relative ones), the wikilink classes; script and style elements go with their content."""
    attributes = {tag: set(allowed) for tag, allowed in nh3.ALLOWED_ATTRIBUTES.items()}
    attributes["a"] = {*attributes.get("a", set()), "title"}
    attributes["span"] = {"title"}
    return nh3.clean(
        html,
        attributes=attributes,
        url_schemes=set(URL_SCHEMES),
        allowed_classes={"a": set(WIKILINK_CLASSES), "span": set(WIKILINK_CLASSES)},
        link_rel="noopener noreferrer nofollow",
    )


def render(text: str, *, links: Links) -> str:
    """``text`` (markdown) as sanitised HTML, its wikilinks pointing where ``links`` says."""
    parser = _parser()
    env: dict[str, Any] = {}
    tokens = parser.parse(text, env)
    targets = _targets(tokens)
    env["wikilinks"] = dict(links(targets)) if targets else {}
    return sanitise(parser.renderer.render(tokens, parser.options, env))
