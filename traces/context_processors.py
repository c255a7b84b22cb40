"""The dashboard's navigation context: the user's projects, the current one, the role."""

from typing import Any

from django.http import HttpRequest

from traces.views import dashboard_for


def dashboard(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    state = dashboard_for(request)
    return {
        "nav_projects": [a.project for a in state.accesses],
        "nav_access": state.current,
        "nav_is_admin": state.current is not None and state.current.is_admin,
    }
