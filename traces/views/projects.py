from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from traces.http import AuthedRequest
from traces.views.common import SESSION_PROJECT, dashboard_for, redirect_to_next


@require_POST
@login_required
def project_switch(request: AuthedRequest) -> HttpResponse:
    wanted = int(request.POST.get("project") or 0)
    if any(a.project.pk == wanted for a in dashboard_for(request).accesses):
        request.session[SESSION_PROJECT] = wanted
    return redirect_to_next(request, reverse("traces:list"))
