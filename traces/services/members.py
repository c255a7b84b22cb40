"""Project members and their roles, changed by project admins; every change is audited."""

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from core.errors import Conflict, InvalidInput, NotFound
from traces.models import Membership, Project
from traces.services.audit import audit_event


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
    password = secrets.token_urlsafe(12)
    user = users.model(username=username, email=email)
    user.set_password(password)
    try:
        user.full_clean()
    except ValidationError as failure:
        raise InvalidInput("; ".join(failure.messages)) from None
    try:
        with transaction.atomic():
            user.save()
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
