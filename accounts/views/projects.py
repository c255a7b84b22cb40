from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.dashboard import SESSION_PROJECT, dashboard_for
from core.http import AuthedRequest
from core.pages import redirect_to_next


@require_POST
@login_required
def project_switch(request: AuthedRequest) -> HttpResponse:
    wanted = request.POST.get("project", "")
    access = next((a for a in dashboard_for(request).accesses if str(a.project.pk) == wanted), None)
    if access is None:
        # Not a number, or not a project of this user: a form value, never a server error.
        messages.error(request, "That project is not one of yours; the current one is kept.")
    else:
        request.session[SESSION_PROJECT] = access.project.pk
    return redirect_to_next(request, reverse("traces:list"))
