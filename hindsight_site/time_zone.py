"""Pages show times in the viewer's time zone: the one their account chose, else the site's
(HINDSIGHT_TIME_ZONE). The choice is read once a session (copied into it at the first page,
and again whenever the account page saves it), so no page reads a table for it."""

import zoneinfo
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from accounts.services.users import SESSION_TIME_ZONE, account_time_zone


class UserTimeZoneMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        zone = _zone_of(request)
        if zone:
            timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def _zone_of(request: HttpRequest) -> zoneinfo.ZoneInfo | None:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    name = request.session.get(SESSION_TIME_ZONE)
    if name is None:
        name = request.session[SESSION_TIME_ZONE] = account_time_zone(user=user)
    try:
        return zoneinfo.ZoneInfo(name) if name else None
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None  # a zone this machine's tz database no longer has: the site's
