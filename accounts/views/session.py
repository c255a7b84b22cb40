"""Signing in again in place: a page whose session lapsed (an htmx request answered 401, see
hindsight_site.htmx_session) asks for the password in a dialog and posts it here, so the page,
and the label it could not save, stay where they are."""

from django.contrib.auth import login as auth_login
from django.http import HttpRequest, JsonResponse
from django.middleware.csrf import get_token
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from accounts.forms import ThrottledAuthenticationForm

WRONG = "Your username and password didn't match. Please try again."


@sensitive_post_parameters("password")
@require_POST
def session_sign_in(request: HttpRequest) -> JsonResponse:
    """JSON: the username and the new CSRF token (signing in rotates it), else 401 and why.
    The sign-in page's throttle applies (the same form)."""
    form = ThrottledAuthenticationForm(request, data=request.POST)
    if not form.is_valid():
        return JsonResponse({"detail": form.locked_out_message or WRONG}, status=401)
    auth_login(request, form.get_user())
    return JsonResponse({"username": request.user.get_username(), "csrf_token": get_token(request)})
