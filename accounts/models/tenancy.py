"""Tenancy: projects, their members and roles, and the API keys agents and tools call with."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q


class Project(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    # What reviewers should know when they work the review queue; written by a project admin,
    # shown as plain text on /queue/.
    review_guidelines = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "traces_project"  # made in traces/ (moved here with its rows)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        REVIEWER = "reviewer"
        ADMIN = "admin"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.REVIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "traces_membership"  # made in traces/ (moved here with its rows)
        constraints = [
            models.UniqueConstraint(
                fields=["project", "user"], name="traces_membership_unique_user"
            ),
            models.CheckConstraint(
                condition=Q(role__in=["reviewer", "admin"]), name="traces_membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role} of {self.project})"


class PasswordChangeDue(models.Model):
    """An account signing in with a one-time password a project admin made or reset: it must
    choose its own before it opens anything else (hindsight_site.password_due)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
        related_name="password_change_due",
    )  # fmt: skip
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "traces_passwordchangedue"  # made in traces/ (moved here with its rows)

    def __str__(self) -> str:
        return f"{self.user}: password change due"


class AccountSettings(models.Model):
    """A person's own display settings (the account page)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
        related_name="account_settings",
    )  # fmt: skip
    # An IANA zone ("Europe/Paris") the pages show times in; "" = the site's
    # (HINDSIGHT_TIME_ZONE). Read once a session (hindsight_site.time_zone).
    time_zone = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "traces_accountsettings"  # made in traces/ (moved here with its rows)

    def __str__(self) -> str:
        return f"{self.user}: {self.time_zone or 'site time zone'}"


class ApiKey(models.Model):
    class Scope(models.TextChoices):
        INGEST = "ingest"  # send trajectories (and send one back to review)
        RECALL = "recall"  # recall, its feedback, warnings: what an agent needs at run time
        READ = "read"  # read trajectories (raw observations), experiences, the KB export
        ADMIN = "admin"  # everything

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    # The first characters of the key, shown in lists so a key can be recognised; not secret.
    prefix = models.CharField(max_length=16)
    # sha256 of the whole key: keys are 256-bit random, so a fast hash is enough and keeps auth
    # cheap on every request.
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=16, choices=Scope.choices))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "traces_apikey"  # made in traces/ (moved here with its rows)
        constraints = [
            models.CheckConstraint(
                condition=Q(scopes__contained_by=["ingest", "recall", "read", "admin"]),
                name="traces_apikey_scopes_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.project})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
