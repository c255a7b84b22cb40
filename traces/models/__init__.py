"""Tenancy (projects, members, API keys), trajectories and their steps, reviews and review
claims, the audit log, the /stats/ tallies and what is known of each tool. Django finds the
models here: every one is imported below, so `from traces.models import X` works for each."""

# isort: off
# In the order the models were declared when they shared one module: import order is
# registration order, which apps.get_models() (and so flush, dumpdata, checks) follows.
from traces.models.tenancy import ApiKey, Membership, Project
from traces.models.trajectories import Step, Trace
from traces.models.audit import AuditEvent
from traces.models.reviews import Review, ReviewClaim
from traces.models.tallies import Tally
from traces.models.tenancy import PasswordChangeDue
from traces.models.tools import ToolProfile
from traces.models.tenancy import AccountSettings

# isort: on

__all__ = [
    "AccountSettings",
    "ApiKey",
    "AuditEvent",
    "Membership",
    "PasswordChangeDue",
    "Project",
    "Review",
    "ReviewClaim",
    "Step",
    "Tally",
    "ToolProfile",
    "Trace",
]
