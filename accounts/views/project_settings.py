"""Project settings (admins): members and their roles, their passwords reset, API keys, new
projects."""

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.dashboard import SESSION_PROJECT, project_page
from accounts.forms import (
    ApiKeyForm,
    MemberAddForm,
    MemberCreateForm,
    MemberRoleForm,
    ProjectCreateForm,
)
from accounts.models import ApiKey, Membership
from accounts.selectors.access import ProjectAccess, api_key_list, member_list
from accounts.services import api_keys, members, users
from core.errors import DomainError
from core.http import AuthedRequest


def _settings_context(
    request: AuthedRequest, access: ProjectAccess, **extra: Any
) -> dict[str, Any]:
    listed = member_list(project=access.project)
    for membership in listed:  # why a reset is refused, "" when it is not: the button or why
        membership.reset_refused = members.member_password_resettable(  # type: ignore[attr-defined]
            membership=membership, actor=request.user
        )
    return {
        "members": listed,
        "project_form": extra.pop("project_form", None) or ProjectCreateForm(),
        "keys": api_key_list(project=access.project),
        "key_form": extra.pop("key_form", None) or ApiKeyForm(),
        "member_form": extra.pop("member_form", None) or MemberAddForm(),
        "create_form": extra.pop("create_form", None) or MemberCreateForm(),
        "roles": Membership.Role.choices,
        **extra,
    }


@require_GET
@project_page(admin=True)
def project_settings(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    return render(request, "accounts/settings.html", _settings_context(request, access))


@require_POST
@project_page(admin=True)
def api_key_create(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return render(
            request, "accounts/settings.html", _settings_context(request, access, key_form=form)
        )
    new = api_keys.api_key_create(
        project=access.project, scopes=form.cleaned_data["scopes"],
        name=form.cleaned_data["name"], user=request.user,
    )  # fmt: skip
    # No redirect here on purpose: the key is never stored, so only this response can show it.
    response = render(
        request, "accounts/settings.html", _settings_context(request, access, new_key=new)
    )
    response.headers["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@project_page(admin=True)
def api_key_revoke(request: AuthedRequest, access: ProjectAccess, key_id: int) -> HttpResponse:
    """GET asks first (what stops working, and a button to go on); POST revokes."""
    key = ApiKey.objects.filter(pk=key_id, project=access.project).first()
    if key is None:
        raise Http404("key not found")
    if request.method == "GET":
        if key.revoked_at is not None:
            return redirect("accounts:settings")
        context = _settings_context(request, access, confirm_revoke=key)
        return render(request, "accounts/settings.html", context)
    api_keys.api_key_revoke(key=key, user=request.user)
    messages.success(request, f"Key {key.prefix}… revoked.")
    return redirect("accounts:settings")


@require_POST
@project_page(admin=True)
def member_add(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            members.membership_add(project=access.project, actor=request.user, **form.cleaned_data)
            messages.success(request, f"{form.cleaned_data['username']} added.")
        except DomainError as failure:
            messages.error(request, failure.detail)
    else:
        messages.error(request, "Give a username and a role.")
    return redirect("accounts:settings")


@require_POST
@project_page(admin=True)
def member_create(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = MemberCreateForm(request.POST)
    if form.is_valid():
        try:
            new = members.member_create(
                project=access.project, actor=request.user, **form.cleaned_data
            )
        except DomainError as failure:
            form.add_error("username", failure.detail)
        else:
            # No redirect on purpose: the password is not kept, only this response shows it.
            response = render(
                request,
                "accounts/settings.html",
                _settings_context(request, access, new_member=new),
            )
            response.headers["Cache-Control"] = "no-store"
            return response
    context = _settings_context(request, access, create_form=form)
    return render(request, "accounts/settings.html", context, status=422)


def _get_membership(access: ProjectAccess, membership_id: int) -> Membership:
    membership = (
        Membership.objects.filter(pk=membership_id, project=access.project)
        .select_related("user", "project")
        .first()
    )
    if membership is None:
        raise Http404("member not found")
    return membership


@require_POST
@project_page(admin=True)
def member_update(
    request: AuthedRequest, access: ProjectAccess, membership_id: int
) -> HttpResponse:
    membership = _get_membership(access, membership_id)
    form = MemberRoleForm(request.POST)
    role = form.cleaned_data["role"] if form.is_valid() else ""
    try:
        members.membership_set_role(membership=membership, role=role, actor=request.user)
    except DomainError as failure:
        messages.error(request, failure.detail)
    return redirect("accounts:settings")


@require_http_methods(["GET", "POST"])
@project_page(admin=True)
def member_remove(
    request: AuthedRequest, access: ProjectAccess, membership_id: int
) -> HttpResponse:
    """GET asks first (what the person loses, and a button to go on); POST removes."""
    membership = _get_membership(access, membership_id)
    if request.method == "GET":
        context = _settings_context(request, access, confirm_remove=membership)
        return render(request, "accounts/settings.html", context)
    try:
        members.membership_remove(membership=membership, actor=request.user)
    except DomainError as failure:
        messages.error(request, failure.detail)
    else:
        messages.success(request, f"{membership.user.get_username()} removed from the project.")
    return redirect("accounts:settings")


@require_http_methods(["GET", "POST"])
@project_page(admin=True)
def member_password_reset(
    request: AuthedRequest, access: ProjectAccess, membership_id: int
) -> HttpResponse:
    """GET asks first (what the member's sign-in becomes); POST makes a one-time password,
    shown once on this answer (never kept, no redirect), which they must change at sign-in."""
    membership = _get_membership(access, membership_id)
    if request.method == "GET":
        context = _settings_context(request, access, confirm_reset=membership)
        return render(request, "accounts/settings.html", context)
    try:
        new = members.member_reset_password(membership=membership, actor=request.user)
    except DomainError as failure:
        messages.error(request, failure.detail)
        return redirect("accounts:settings")
    context = _settings_context(request, access, reset_member=new)
    response = render(request, "accounts/settings.html", context)
    response.headers["Cache-Control"] = "no-store"
    return response


@require_POST
@project_page(admin=True)
def project_create(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """A new project, with its creator as admin; it becomes the current project."""
    form = ProjectCreateForm(request.POST)
    if form.is_valid():
        try:
            project = users.project_create(name=form.cleaned_data["name"], actor=request.user)
        except DomainError as failure:
            form.add_error("name", failure.detail)
        else:
            request.session[SESSION_PROJECT] = project.pk
            messages.success(
                request, f"Project {project.name} created, with you as its admin: make its "
                "API key below, and add its members.",
            )  # fmt: skip
            return redirect("accounts:settings")
    context = _settings_context(request, access, project_form=form)
    return render(request, "accounts/settings.html", context, status=422)
