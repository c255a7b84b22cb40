"""Safe HTML for LLM messages written in Markdown, cached for repeated prompts and htmx
re-renders; text with none of Markdown's syntax skips the parser.
"""

import html
import re
from collections.abc import Sequence
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from traces.display.text import reveal


# Markdown in LLM messages: no raw HTML (any tag shows as text), links only to http(s), no
# images (no request leaves the page for agent-chosen addresses), headings kept below the page's.
class _Markdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:  # noqa: N802 - markdown-it's name
        return url.strip().lower().startswith(("http://", "https://"))


def _link_open(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return renderer.renderToken(tokens, idx, options, env)


def _heading(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].tag = f"h{min(6, int(tokens[idx].tag[1]) + 3)}"  # "# x" in a step is an h4
    return renderer.renderToken(tokens, idx, options, env)


_MD = _Markdown("commonmark", {"html": False, "breaks": True})
_MD.enable(["table", "strikethrough"]).disable("image")
_MD.add_render_rule("link_open", _link_open)
_MD.add_render_rule("heading_open", _heading)
_MD.add_render_rule("heading_close", _heading)
# Text with none of Markdown's syntax renders as it is: skips the parser (~0.4 ms a message).
_MD_SYNTAX = re.compile(
    r"[*_`#\[\]<>|~\\&]|\n[ \t]*\n|^[ \t]*(?:[-+]|\d{1,9}[.)])(?:[ \t]|$)|^[ \t]*(?:=+|-+)[ \t]*$"
    r"|^(?: {4}|\t)",
    re.MULTILINE,
)
_MD_MARKS = re.compile(r"[*`]+|^[ \t]{0,3}(?:#{1,6}|>|[-+*]|\d{1,9}[.)])[ \t]+", re.MULTILINE)


MD_CACHED_CHARS = 20_000  # the cache: 512 messages of at most this size, ~20 MB at worst


def markdown_html(text: str) -> str:
    """Safe HTML for an LLM message written in Markdown (invisible characters revealed first)."""
    return _markdown_cached(text) if len(text) <= MD_CACHED_CHARS else _markdown(text)


def _markdown(text: str) -> str:
    text = reveal(text)
    if not _MD_SYNTAX.search(text):
        return "<p>" + html.escape(text).replace("\n", "<br>\n") + "</p>"
    return _MD.render(text)


_markdown_cached = lru_cache(maxsize=512)(_markdown)  # repeated prompts, htmx re-renders


def markdown_gist(text: str) -> str:
    """The message without Markdown's emphasis, code, heading, quote and list marks: what a
    one-line preview of it shows."""
    return _MD_MARKS.sub("", text)
