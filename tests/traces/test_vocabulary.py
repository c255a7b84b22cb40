"""The domain's words are defined once: the API's outcome values, the model's choices and the
CHECK constraint are the same list, and 'success or partial counts as success' is one rule."""

from typing import get_args

from traces.models import Trace
from traces.review.types import SUCCEEDED_OUTCOMES, counts_as_success
from traces.schemas import OUTCOMES, Outcome


def test_the_apis_outcomes_are_the_models_choices():
    assert OUTCOMES == get_args(Outcome) == tuple(Trace.Outcome.values)
    constraint = next(c for c in Trace._meta.constraints if c.name == "traces_trace_outcome_valid")
    assert dict(constraint.condition.children)["outcome__in"] == Trace.Outcome.values


def test_success_or_partial_counts_as_success_and_nothing_else():
    assert SUCCEEDED_OUTCOMES <= set(OUTCOMES)
    assert [o for o in OUTCOMES if counts_as_success(o)] == ["success", "partial"]
    assert not counts_as_success("unknown")
