"""The request the dashboard views are given, as mypy should see it.

HtmxMiddleware adds `request.htmx` to every request, and every page is behind login_required, so a
view's `request.user` is a signed-in User, never AnonymousUser. django-htmx and django-stubs both
document annotating views with such a subclass of HttpRequest; it adds nothing at run time.
"""

from typing import TypeGuard

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AuthedRequest(HttpRequest):
    """A request that went through HtmxMiddleware and login_required."""

    htmx: HtmxDetails
    user: User


def is_signed_in(request: HttpRequest) -> TypeGuard[AuthedRequest]:
    """For code that also serves anonymous requests (context processors)."""
    user = getattr(request, "user", None)  # absent before AuthenticationMiddleware
    return user is not None and user.is_authenticated
