from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from accounts.forms import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm
from accounts.views import account
from accounts.views.sign_in_link import sign_in_link
from hindsight_site.api import api

# Both sign-in pages refuse a locked-out username or address (accounts.services.login_throttle).
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("", RedirectView.as_view(url="/traces/", permanent=False)),
    # Browsers ask for it on pages that name no icon (the admin, the API docs).
    path("favicon.ico", RedirectView.as_view(url=static("img/favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        LoginView.as_view(authentication_form=ThrottledAuthenticationForm),
        name="login",
    ),
    # the site's own password change (Django's renders the admin's page, whose links lead to
    # an admin sign-in a reviewer cannot use); the rest of Django's account pages as they are
    path(
        "accounts/password_change/",
        account.AccountPasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password_change/done/",
        account.password_change_done,
        name="password_change_done",
    ),
    # the account's own settings (the time zone pages show times in)
    path("accounts/settings/", account.account_settings, name="account_settings"),
    # One-time links from `manage.py sign_in_link`: past the sign-in throttle.
    path("accounts/link/<str:token>/", sign_in_link, name="sign_in_link"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", api.urls),
    path("api/docs", RedirectView.as_view(url="/api/v1/docs", permanent=False)),
    # projects and their settings, members, keys, the audit log
    path("", include("accounts.urls")),
    # dashboard pages (traces, inspector, queue, stats)
    path("", include("traces.urls")),
    # curation pages (experience library and detail, merge queue, knowledge base)
    path("", include("experiences.urls")),
]
