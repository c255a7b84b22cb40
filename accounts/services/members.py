"""Project members and their roles, changed by project admins; every change is audited."""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from accounts.models import Membership, Project
from accounts.services.audit import audit_event
from accounts.services.users import one_time_password, password_change_due_set
from core.errors import Conflict, InvalidInput, NotFound


def _admins_left(project: Project, *, without: Membership) -> int:
    return (
        Membership.objects.filter(project=project, role=Membership.Role.ADMIN)
        .exclude(pk=without.pk)
        .count()
    )


def membership_add(*, project: Project, username: str, role: str, actor: User) -> Membership:
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        raise NotFound(f"no user named '{username}'; a superuser creates accounts in /admin/")
    if role not in Membership.Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Membership.Role.values)}")
    try:
        with transaction.atomic():
            membership = Membership.objects.create(project=project, user=user, role=role)
            audit_event(
                action="member.add", object_type="membership", object_id=membership.pk,
                project=project, user=actor, after={"user": user.get_username(), "role": role},
            )  # fmt: skip
    except IntegrityError:
        raise Conflict(f"'{username}' is already a member of {project}") from None
    return membership


@dataclass(frozen=True)
class NewMember:
    membership: Membership
    password: str  # shown once to the admin who made the account, never stored in clear


def member_create(
    *, project: Project, username: str, email: str, role: str, actor: User
) -> NewMember:
    """A new account and its membership, with a generated one-time password to hand over."""
    username, email = username.strip(), email.strip()
    if role not in Membership.Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Membership.Role.values)}")
    users = get_user_model().objects
    if users.filter(username__iexact=username).exists():
        raise Conflict(f"an account named '{username}' exists already: add it as a member instead")
    password = one_time_password()
    user = users.model(username=username, email=email)
    user.set_password(password)
    try:
        user.full_clean()
    except ValidationError as failure:
        raise InvalidInput("; ".join(failure.messages)) from None
    try:
        with transaction.atomic():
            user.save()
            password_change_due_set(user=user, actor=actor)
            membership = Membership.objects.create(project=project, user=user, role=role)
            audit_event(
                action="member.create", object_type="membership", object_id=membership.pk,
                project=project, user=actor,
                after={"user": username, "email": email, "role": role},
            )  # fmt: skip
    except IntegrityError:  # the same name, created between the check and the insert
        raise Conflict(f"an account named '{username}' exists already") from None
    return NewMember(membership=membership, password=password)


def membership_set_role(*, membership: Membership, role: str, actor: User) -> Membership:
    if role not in Membership.Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Membership.Role.values)}")
    if membership.role == role:
        return membership
    with transaction.atomic():
        membership = Membership.objects.select_for_update().get(pk=membership.pk)
        if membership.role == Membership.Role.ADMIN and not _admins_left(
            membership.project, without=membership
        ):
            raise Conflict("a project keeps at least one admin")
        before = membership.role
        membership.role = role
        membership.save(update_fields=["role"])
        audit_event(
            action="member.role", object_type="membership", object_id=membership.pk,
            project=membership.project, user=actor,
            before={"user": membership.user.get_username(), "role": before},
            after={"user": membership.user.get_username(), "role": role},
        )  # fmt: skip
    return membership


def membership_remove(*, membership: Membership, actor: User) -> None:
    with transaction.atomic():
        membership = (
            Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
        )
        if membership.role == Membership.Role.ADMIN and not _admins_left(
            membership.project, without=membership
        ):
            raise Conflict("a project keeps at least one admin")
        audit_event(
            action="member.remove", object_type="membership", object_id=membership.pk,
            project=membership.project, user=actor,
            before={"user": membership.user.get_username(), "role": membership.role},
        )  # fmt: skip
        membership.delete()


def member_password_resettable(*, membership: Membership, actor: User) -> str:
    """Why `actor` may not reset this member's password ("" when they may): a project admin
    resets only accounts whose every project they administer, never a staff or superuser
    account nor their own (that one they change themselves), so a reset reaches no project the
    admin could not open already."""
    user = membership.user
    if user.pk == actor.pk:
        return "your own password you change yourself"
    if user.is_superuser or user.is_staff:
        return "a site administrator's password is reset in /admin/"
    if actor.is_superuser:
        return ""
    administered = Membership.objects.filter(user=actor, role=Membership.Role.ADMIN).values(
        "project_id"
    )
    if Membership.objects.filter(user=user).exclude(project_id__in=administered).exists():
        return "they are also a member of a project you do not administer"
    return ""


def member_reset_password(*, membership: Membership, actor: User) -> NewMember:
    """A new one-time password for a member, to hand over; they must change it at sign-in, and
    every session they have ends (Django's session check follows the password)."""
    refused = member_password_resettable(membership=membership, actor=actor)
    if refused:
        raise Conflict(f"cannot reset {membership.user.get_username()}'s password: {refused}")
    password = one_time_password()
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=membership.user_id)
        user.set_password(password)
        user.save(update_fields=["password"])
        password_change_due_set(user=user, actor=actor)
        audit_event(
            action="member.password_reset", object_type="membership", object_id=membership.pk,
            project=membership.project, user=actor, after={"user": user.get_username()},
        )  # fmt: skip
    return NewMember(membership=membership, password=password)
