"""The dashboard's navigation context: the user's projects, the current one, the role."""

from typing import Any

from django.http import HttpRequest

from accounts.dashboard import dashboard_for
from core.http import is_signed_in


def dashboard(request: HttpRequest) -> dict[str, Any]:
    if not is_signed_in(request):
        return {}
    state = dashboard_for(request)
    return {
        "nav_projects": [a.project for a in state.accesses],
        "nav_access": state.current,
        "nav_is_admin": state.current is not None and state.current.is_admin,
    }
