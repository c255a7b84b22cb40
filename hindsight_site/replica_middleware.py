"""Dashboard pages read the replica (DATABASE_REPLICA_URL); a browser that just posted reads the
primary for a while, so it sees its own writes whatever the replica's lag.

Which requests read the replica: GET / HEAD requests of the dashboard's page views (those in
`traces.views` and `experiences.views`), their htmx partials included. The API, the admin
site and the sign-in pages read the primary (hindsight_site.db_router says why recall is the
exception).

Read-your-writes: the answer to any request that may write (POST, PUT, PATCH, DELETE) outside
the API sets a signed cookie that keeps that browser's pages on the primary for
HINDSIGHT_REPLICA_PIN_SECONDS. The cookie, not the session: the session is written to the
primary too and would have to be read before we know where to read it from. A forged or
expired cookie is ignored (its signature carries its time); one a client keeps sending only
sends its own reads to the primary.
"""

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse

from hindsight_site import db_router

PIN_COOKIE = "hindsight_read_primary"
PIN_SALT = "hindsight_site.replica_middleware.pin"
READ_METHODS = frozenset({"GET", "HEAD"})
# Methods that never change anything: they do not pin the browser to the primary.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
PAGE_MODULES = ("accounts.views.", "traces.views.", "experiences.views.")


class ReplicaReadMiddleware:
    """Marks dashboard GET pages as replica-readable; pins a browser that posted to the primary.

    Not used at all (MiddlewareNotUsed) when no replica is configured.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not db_router.replica_configured():
            raise MiddlewareNotUsed("DATABASE_REPLICA_URL is not set")
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with db_router.request_reads():
            response = self.get_response(request)
        if request.method not in SAFE_METHODS and not request.path.startswith("/api/"):
            _pin_to_primary(response)
        return response

    def process_view(self, request: HttpRequest, view_func: Callable, view_args, view_kwargs):
        module = getattr(view_func, "__module__", "") or ""
        if (
            request.method in READ_METHODS
            and module.startswith(PAGE_MODULES)
            and not _pinned_to_primary(request)
        ):
            db_router.allow_replica_reads()
        return None


def _pinned_to_primary(request: HttpRequest) -> bool:
    seconds = settings.HINDSIGHT_REPLICA_PIN_SECONDS
    if seconds <= 0:
        return False
    value = request.get_signed_cookie(PIN_COOKIE, default=None, salt=PIN_SALT, max_age=seconds)
    return value is not None


def _pin_to_primary(response: HttpResponse) -> None:
    seconds = settings.HINDSIGHT_REPLICA_PIN_SECONDS
    if seconds <= 0:
        return
    response.set_signed_cookie(
        PIN_COOKIE,
        "1",
        salt=PIN_SALT,
        max_age=seconds,
        httponly=True,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )
