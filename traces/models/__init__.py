"""Trajectories and their steps, reviews and review claims, the /stats/ tallies and what is
known of each tool (tenancy and the audit log are accounts.models). Django finds the
models here: every one is imported below, so `from traces.models import X` works for each."""

# isort: off
# In the order the models were declared when they shared one module: import order is
# registration order, which apps.get_models() (and so flush, dumpdata, checks) follows.
from traces.models.trajectories import Step, Trace
from traces.models.reviews import Review, ReviewClaim
from traces.models.tallies import Tally
from traces.models.tools import ToolProfile

# isort: on

__all__ = [
    "Review",
    "ReviewClaim",
    "Step",
    "Tally",
    "ToolProfile",
    "Trace",
]
