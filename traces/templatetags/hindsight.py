"""The `hindsight` template library: filters for untrusted trace text and the inspector's tags.

What they show is built in traces/display/ (`text`: reveal, previews, JSON; `markdown`;
`step_item`: the inspector's step item and the raw observation in HTML).
"""

from typing import Any

from django import template
from django.template import Context
from django.utils.safestring import SafeString, mark_safe

from traces.display.step_item import kind_name, raw_observation_html, step_item_html
from traces.display.text import reveal

register = template.Library()
register.filter("kind_name", kind_name)  # a step's kind as people read it


@register.filter
def shown(value: object) -> str:
    """Untrusted text with invisible and direction-changing characters made visible.

    Not marked safe: autoescaping still applies to the result.
    """
    if value is None:
        return ""
    return reveal(str(value))


@register.simple_tag
def raw_observation(raw: str) -> SafeString:
    return mark_safe(raw_observation_html(raw))  # noqa: S308 - every value escaped there


@register.simple_tag(takes_context=True)
def step_item(context: Context, step: Any, conflict: str = "") -> SafeString:
    """One step of the inspector's timeline (every value escaped in `step_item_html`)."""
    csrf = str(context.get("csrf_token", ""))
    return mark_safe(step_item_html(step, trace=context["trace"], csrf=csrf, conflict=conflict))  # noqa: S308
