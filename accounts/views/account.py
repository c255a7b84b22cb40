"""The signed-in user's own account: the time zone pages show times in, and changing the
password inside the site (forced after a one-time password, see hindsight_site.password_due)."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import PasswordChangeView
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_GET, require_http_methods

from accounts.services import users
from accounts.services.users import SESSION_PASSWORD_DUE
from core.errors import DomainError
from core.http import AuthedRequest


class AccountPasswordChangeView(PasswordChangeView):
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("password_change_done")

    def get_context_data(self, **kwargs):  # noqa: ANN003, ANN201
        context = super().get_context_data(**kwargs)
        context["is_due"] = bool(self.request.session.get(SESSION_PASSWORD_DUE))
        return context

    def form_valid(self, form: PasswordChangeForm) -> HttpResponse:
        response = super().form_valid(form)  # saves it and keeps this session signed in
        users.password_changed(request=self.request, user=form.user)
        return response


@require_GET
@login_required
def password_change_done(request: AuthedRequest) -> HttpResponse:
    return render(request, "registration/password_change_done.html")


@require_http_methods(["GET", "POST"])
@login_required
def account_settings(request: AuthedRequest) -> HttpResponse:
    chosen = users.account_time_zone(user=request.user)
    error = ""
    if request.method == "POST":
        wanted = request.POST.get("time_zone", "")
        try:
            chosen = users.account_time_zone_set(
                request=request, user=request.user, time_zone=wanted
            )
        except DomainError as failure:
            error, chosen = failure.detail, wanted
        else:
            messages.success(
                request, f"Times are shown in {chosen or settings.TIME_ZONE} from now on."
            )
            return redirect("account_settings")
    return render(
        request,
        "registration/account_settings.html",
        {
            "zones": users.time_zones(),
            "chosen": chosen,
            "site_zone": settings.TIME_ZONE,
            "error": error,
        },
        status=422 if error else 200,
    )
