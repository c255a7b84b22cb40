"""What every dashboard page does with its request: the page cursor, page-or-partial rendering
(views ask whether htmx made a request only through `wants_partial`: a test keeps it so), the
whole-page move after a POST, the redirect to `next`."""

from collections.abc import Callable

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect

from core.errors import DomainError
from core.http import AuthedRequest
from core.pagination import decode_cursor


def page_cursor(request: AuthedRequest) -> str | None:
    """The page cursor if it is well-formed; a mangled one shows the first page."""
    cursor = request.GET.get("cursor") or None
    if cursor is None:
        return None
    try:
        decode_cursor(cursor)
    except DomainError:
        return None
    return cursor


def query_without_cursor(request: AuthedRequest) -> str:
    """The list's filters as a query string, for its next-page and filter links."""
    query = request.GET.copy()
    query.pop("cursor", None)
    return query.urlencode()


def wants_partial(request: AuthedRequest) -> bool:
    """An htmx request for a part of a page. Not a boosted navigation, and not a history
    restore: after `hx-push-url`, a back button whose page is no longer in htmx's cache asks
    the URL again with HX-History-Restore-Request and must get the whole page."""
    htmx = request.htmx
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def navigate(request: AuthedRequest, url: str) -> HttpResponse:
    """After a POST, the whole page goes to `url`: htmx is told to (HX-Redirect; a 302 would be
    followed inside the element it swaps), a plain form gets the redirect."""
    return HttpResponseClientRedirect(url) if wants_partial(request) else redirect(url)


def vary_on_htmx(response: HttpResponse) -> HttpResponse:
    """For a GET whose answer depends on HX-Request: caches keep the two apart."""
    patch_vary_headers(response, ["HX-Request"])
    return response


def render_page_or_partial(
    request: AuthedRequest,
    template: str,
    partial: str,
    context: dict,
    *,
    page_context: Callable[[], dict] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The partial for htmx, the whole page otherwise (never cached across the two).
    `page_context` gives what only the whole page shows around the partial: it is asked for
    only when the whole page is rendered, so a partial costs none of its queries."""
    if wants_partial(request):
        return vary_on_htmx(render(request, f"{template}#{partial}", context, status=status))
    if page_context is not None:
        context = {**context, **page_context()}
    return vary_on_htmx(render(request, template, context, status=status))


def redirect_to_next(request: AuthedRequest, default: str) -> HttpResponse:
    """Post/redirect/get to the form's `next` when it is a local URL, else to `default`."""
    next_url = request.POST.get("next") or default
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}):
        next_url = default
    return redirect(next_url)
