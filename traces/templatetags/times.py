"""One way to show a moment on every page: `{% when value %}` (a builtin, no `{% load %}`).

A `<time>` element in the viewer's time zone (their account setting, else the site's
HINDSIGHT_TIME_ZONE: hindsight_site.time_zone), always `2026-12-03 09:14 CET`; `"date"` shows
the day only, `"time"` the hour only (a claim that runs out today). Its title gives the seconds
and the zone's name, its `datetime` the exact instant for machines.
"""

from datetime import date, datetime
from typing import Literal

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()

FORMATS = {"datetime": "%Y-%m-%d %H:%M %Z", "date": "%Y-%m-%d", "time": "%H:%M %Z"}


@register.simple_tag
def when(value: datetime | date | None, part: Literal["datetime", "date", "time"] = "datetime"):
    """The moment as a `<time>` element ('' for none)."""
    if not value:
        return ""
    if not isinstance(value, datetime):  # a day
        return format_html('<time datetime="{}">{}</time>', value.isoformat(), value.isoformat())
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    zone = timezone.get_current_timezone_name()
    full = f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''} ({zone})".replace("  ", " ")
    shown = local.strftime(FORMATS.get(part, FORMATS["datetime"])).strip()
    return format_html('<time datetime="{}" title="{}">{}</time>', value.isoformat(), full, shown)
