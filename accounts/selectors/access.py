"""Who may see what: a user's projects and roles, a project's members and API keys."""

from dataclasses import dataclass

from django.contrib.auth.models import User

from accounts.models import ApiKey, Membership, Project


@dataclass(frozen=True)
class ProjectAccess:
    """A project the user may open, and what they may do there."""

    project: Project
    role: str  # Membership.Role value; superusers count as admins everywhere

    @property
    def is_admin(self) -> bool:
        return self.role == Membership.Role.ADMIN


def project_access_list(*, user: User) -> list[ProjectAccess]:
    """The projects a user belongs to (all of them for a superuser), by name; one query."""
    if not user.is_authenticated or not user.is_active:
        return []
    if user.is_superuser:
        return [
            ProjectAccess(project=p, role=Membership.Role.ADMIN)
            for p in Project.objects.order_by("name")
        ]
    memberships = (
        Membership.objects.filter(user=user).select_related("project").order_by("project__name")
    )
    return [ProjectAccess(project=m.project, role=m.role) for m in memberships]


def member_list(*, project: Project) -> list[Membership]:
    return list(
        Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    )


def api_key_list(*, project: Project) -> list[ApiKey]:
    return list(
        ApiKey.objects.filter(project=project)
        .select_related("created_by")
        .order_by("revoked_at", "-pk")
    )
