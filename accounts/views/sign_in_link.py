"""GET /accounts/link/<token>/: a console sign-in link (accounts.services.sign_in_links)."""

from django.conf import settings
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts.services.sign_in_links import sign_in_link_user

SPENT = (
    "This sign-in link does not work: it was used already, it expired, or it was cut when "
    "copied. Make another at the console: manage.py sign_in_link USERNAME\n"
)


@never_cache
@require_GET
def sign_in_link(request: HttpRequest, token: str) -> HttpResponse:
    user = sign_in_link_user(token)
    if user is None:
        return HttpResponse(SPENT, status=400, content_type="text/plain; charset=utf-8")
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL)
