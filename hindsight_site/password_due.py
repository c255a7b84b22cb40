"""An account that signed in with a one-time password chooses its own before anything else.

The mark is in the session (accounts.services.users copies it there at sign-in), so this
reads no table. Every dashboard page, the admin site and htmx requests (sent to the page with
HX-Redirect) lead to the password change; signing out, and the change itself, stay open. The
API authenticates with keys, not sessions, and is left alone.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from accounts.services.users import SESSION_PASSWORD_DUE

OPEN = ("password_change", "password_change_done", "logout", "login")


class PasswordChangeDueMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            request.session.get(SESSION_PASSWORD_DUE)
            and request.user.is_authenticated
            and not request.path.startswith("/api/")
            and request.path not in {reverse(name) for name in OPEN}
        ):
            url = reverse("password_change")
            if request.headers.get("HX-Request") == "true":
                return HttpResponseClientRedirect(url)
            return redirect(url)
        return self.get_response(request)
