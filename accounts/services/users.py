"""Accounts in the dashboard: a one-time password (made or reset by a project admin) that must
be changed before anything else, changing one's password, and new projects.

The "must change" mark is a `PasswordChangeDue` row; at sign-in it is copied into the session
(`SESSION_PASSWORD_DUE`), so the middleware that enforces it (hindsight_site.password_due)
reads no table on any other request.
"""

import secrets
import zoneinfo
from functools import cache

from django.contrib.auth.models import User
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.dispatch import receiver
from django.http import HttpRequest

from accounts.models import AccountSettings, Membership, PasswordChangeDue, Project
from accounts.services.audit import audit_event
from core.errors import Conflict, InvalidInput

SESSION_PASSWORD_DUE = "hindsight_password_change_due"
# The account's time zone, copied into the session once ("" = the site's): see
# hindsight_site.time_zone.
SESSION_TIME_ZONE = "hindsight_time_zone"


@cache
def time_zones() -> list[str]:
    """The IANA zones this machine knows, sorted (the account page's choices)."""
    return sorted(zoneinfo.available_timezones())


def account_time_zone(*, user: User) -> str:
    """The zone the account chose ("" = the site's)."""
    chosen = AccountSettings.objects.filter(user=user).values_list("time_zone", flat=True)
    return chosen.first() or ""


def account_time_zone_set(*, request: HttpRequest, user: User, time_zone: str) -> str:
    """Show times in `time_zone` ("" = the site's) from now on, this session included."""
    time_zone = time_zone.strip()
    if time_zone and time_zone not in time_zones():
        raise InvalidInput(f"time_zone: {time_zone[:64]!r} is not a time zone this site knows")
    AccountSettings.objects.update_or_create(user=user, defaults={"time_zone": time_zone})
    request.session[SESSION_TIME_ZONE] = time_zone
    return time_zone


def one_time_password() -> str:
    return secrets.token_urlsafe(12)


def password_change_due_set(*, user: User, actor: User) -> None:
    PasswordChangeDue.objects.update_or_create(user=user, defaults={"set_by": actor})


def password_changed(*, request: HttpRequest, user: User) -> None:
    """The user chose their own password: nothing is due any more."""
    deleted, _ = PasswordChangeDue.objects.filter(user=user).delete()
    request.session.pop(SESSION_PASSWORD_DUE, None)
    audit_event(
        action="account.password_change", object_type="user", object_id=user.pk, user=user,
        after={"was_one_time": bool(deleted)},
    )  # fmt: skip


@receiver(user_logged_in, dispatch_uid="hindsight-password-change-due")
def _copy_the_account_into_the_session(sender, request, user, **kwargs) -> None:  # noqa: ANN001
    if request is None or not hasattr(request, "session"):
        return
    if PasswordChangeDue.objects.filter(user=user).exists():
        request.session[SESSION_PASSWORD_DUE] = True
    else:
        request.session.pop(SESSION_PASSWORD_DUE, None)
    # The zone pages show times in, read here once (hindsight_site.time_zone).
    request.session[SESSION_TIME_ZONE] = account_time_zone(user=user)


def project_create(*, name: str, actor: User) -> Project:
    """A new project with `actor` as its first admin."""
    project = Project(name=name.strip())
    try:
        project.full_clean()
    except ValidationError as failure:
        if "name" in failure.message_dict and Project.objects.filter(name=project.name).exists():
            raise Conflict(f"a project named '{project.name}' exists already") from None
        raise InvalidInput("; ".join(failure.messages)) from None
    try:
        with transaction.atomic():
            project.save()
            Membership.objects.create(project=project, user=actor, role=Membership.Role.ADMIN)
            audit_event(
                action="project.create", object_type="project", object_id=project.pk,
                project=project, user=actor, after={"name": project.name},
            )  # fmt: skip
    except IntegrityError:  # the same name, created between the check and the insert
        raise Conflict(f"a project named '{project.name}' exists already") from None
    return project
