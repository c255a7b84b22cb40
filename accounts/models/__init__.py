"""Tenancy: projects, their members and roles, people's own settings, the API keys agents and
tools call with, and the audit log of who did what. Django finds the models here: every one is
imported below, so `from accounts.models import X` works for each."""

# isort: off
from accounts.models.tenancy import AccountSettings, ApiKey, Membership, PasswordChangeDue, Project
from accounts.models.audit import AuditEvent

# isort: on

__all__ = [
    "AccountSettings",
    "ApiKey",
    "AuditEvent",
    "Membership",
    "PasswordChangeDue",
    "Project",
]
