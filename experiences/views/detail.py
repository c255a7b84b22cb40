"""One experience: its versions, provenance, neighbours and merges, with the admin's forms."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.http import AuthedRequest
from experiences import selectors
from experiences.forms import ExperienceEditForm, ScopeForm
from experiences.views._shared import object_of_user

DETAIL = "experiences/detail.html"


@require_GET
@login_required
def experience_detail(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = object_of_user(
        request,
        selectors.experience_for_user,
        "experience",
        experience_id=experience_id,
        light=False,
    )
    detail = selectors.experience_detail(experience=experience, user=request.user)
    context = {
        "detail": detail,
        "experience": experience,
        "is_admin": access.is_admin,
        "edit_form": ExperienceEditForm.for_experience(experience),
        "scope_form": ScopeForm.for_experience(experience),
        "proposal_threshold": settings.HINDSIGHT_DEDUP_PROPOSAL_THRESHOLD,
    }
    return render(request, DETAIL, context)
