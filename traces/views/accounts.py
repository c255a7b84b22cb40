"""The signed-in user's own account: changing the password inside the site (forced after a
one-time password, see hindsight_site.password_due)."""

from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import PasswordChangeView
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse_lazy
from django.views.decorators.http import require_GET

from core.http import AuthedRequest
from traces.services import accounts
from traces.services.accounts import SESSION_PASSWORD_DUE


class AccountPasswordChangeView(PasswordChangeView):
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("password_change_done")

    def get_context_data(self, **kwargs):  # noqa: ANN003, ANN201
        context = super().get_context_data(**kwargs)
        context["is_due"] = bool(self.request.session.get(SESSION_PASSWORD_DUE))
        return context

    def form_valid(self, form: PasswordChangeForm) -> HttpResponse:
        response = super().form_valid(form)  # saves it and keeps this session signed in
        accounts.password_changed(request=self.request, user=form.user)
        return response


@require_GET
@login_required
def password_change_done(request: AuthedRequest) -> HttpResponse:
    return render(request, "registration/password_change_done.html")
