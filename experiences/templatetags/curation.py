"""Template helpers of the curation pages (lifecycle buttons, scope and similarity wording)."""

import re
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from experiences.services.curation import TRANSITIONS
from traces.display.text import reveal

register = template.Library()

# The button wording of each move, and the order they appear in.
STATUS_ACTIONS = {
    "approved": "Approve",
    "promoted": "Promote",
    "candidate": "To candidate",
    "archived": "Archive",
    "rejected": "Reject",
}


# A move named for what it does from where the experience is: "Approve" on a promoted one
# would take it out of the knowledge base.
STATUS_ACTIONS_FROM = {("promoted", "approved"): "Demote to approved"}


@register.filter
def next_statuses(experience: Any) -> list[tuple[str, str]]:
    """The statuses this experience may move to, as (value, button label), in a fixed order."""
    allowed = TRANSITIONS.get(experience.status, set())
    return [
        (value, STATUS_ACTIONS_FROM.get((experience.status, value), label))
        for value, label in STATUS_ACTIONS.items()
        if value in allowed
    ]


@register.filter
def scope_parts(experience: Any) -> list[tuple[str, str]]:
    """("environment", "k8s"), ("agent", "ops-bot"), ...; empty for a global experience."""
    return [
        *(("environment", v) for v in experience.scope_environments),
        *(("agent", v) for v in experience.scope_agents),
        *(("user", v) for v in experience.scope_users),
    ]


@register.filter
def percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.1f} %"


@register.filter
def article_group(key: str) -> str:
    """ "tool:docker_logs" -> "docker_logs"."""
    return key.partition(":")[2] or key


@register.filter
def ago(value: Any) -> str:
    """ "3 hours ago": the largest unit only, for narrow columns."""
    return f"{timesince(value, depth=1)} ago" if value else ""


# ---------------------------------------------------------------------------- article bodies
# Articles are Markdown written by a template, an LLM or a person. They are shown through this
# small renderer of the subset they use (headings, bullet lists, paragraphs, `code`, **strong**,
# _em_): every piece of text is escaped first and the tags are added around escaped text, so no
# markup from the article itself ever reaches the page (no raw HTML, no links).

_INLINE = [
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])[_*](?![\s_*])(.+?)(?<![\s_*])[_*](?![\w*])"), r"<em>\1</em>"),
]


def _inline(text: str) -> str:
    html: str = escape(reveal(text))  # plain str once the tags are substituted in
    for pattern, replacement in _INLINE:
        html = pattern.sub(replacement, html)
    return html


def markdown_subset_html(body: str, *, title: str = "") -> str:
    out: list[str] = []
    in_list = False
    paragraph: list[str] = []

    def flush() -> None:
        nonlocal in_list
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
            paragraph.clear()
        if in_list:
            out.append("</ul>")
            in_list = False

    lines = body.splitlines()
    if lines and lines[0].startswith("# ") and lines[0][2:].strip() == title.strip():
        lines = lines[1:]  # the card's heading already says it
    for line in lines:
        stripped = line.strip()
        heading = re.match(r"(#{1,6})\s+(.*)", stripped)
        item = re.match(r"[-*+]\s+(.*)", stripped)
        if not stripped:
            flush()
        elif heading:
            flush()
            level = min(len(heading.group(1)) + 3, 6)  # inside an article card: h4 and below
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif item:
            if paragraph:
                out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
                paragraph.clear()
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{_inline(item.group(1))}</li>")
        else:
            if in_list:  # a plain line after a list starts a paragraph
                out.append("</ul>")
                in_list = False
            paragraph.append(stripped)
    flush()
    return "\n".join(out)


@register.filter
def article_html(article: Any) -> SafeString:
    """An article's body as HTML built from escaped pieces (see markdown_subset_html)."""
    return mark_safe(markdown_subset_html(article.body, title=article.title))  # noqa: S308
