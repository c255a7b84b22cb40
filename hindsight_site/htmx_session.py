"""An htmx request of a signed-out browser gets a 401 it can act on, not the sign-in page.

`login_required` answers a request without a session with a redirect to the sign-in page; the
browser's XMLHttpRequest follows it, and htmx swapped the sign-in page into the step being
labelled, saving nothing and saying nothing. For htmx requests that redirect becomes a 401 with
`{"detail", "login_url"}`: static/js/hindsight.js keeps the request, asks for the password in
place (accounts.views.session) and sends it again.
"""

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import resolve_url

SESSION_LAPSED = "Your session has ended: sign in again and what you did is sent again."


class HtmxSessionLapsedMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 302
            and request.headers.get("HX-Request") == "true"
            and not request.user.is_authenticated
            and urlsplit(response.get("Location", "")).path == resolve_url(settings.LOGIN_URL)
        ):
            lapsed = JsonResponse(
                {"detail": SESSION_LAPSED, "login_url": response["Location"]}, status=401
            )
            lapsed["Cache-Control"] = "no-store"
            return lapsed
        return response
