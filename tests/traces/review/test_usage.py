"""How one run used each tool, for the project's tool profiles (no database)."""

import pytest

from tests.support.review_builders import request_for, sv, tv
from traces.review.usage import tool_usage


def run(outcome):
    steps = [
        sv(0, "user_input", content="Change the flight of reservation K1NW8N"),
        sv(1, tool="get_reservation_details", arguments={"id": "K1NW8N"}, observation="HAT001"),
        sv(2, tool="update_reservation_flights", arguments={"flights": ["HAT001"]}),
    ]
    return request_for(tv(outcome=outcome), steps)


@pytest.mark.parametrize(
    ("outcome", "succeeded"),
    [("success", True), ("partial", True), ("failure", False), ("unknown", False)],
)
def test_the_last_call_ended_a_success_when_the_run_counts_as_one(outcome, succeeded):
    usage = tool_usage(run(outcome))
    assert usage["update_reservation_flights"].final
    assert usage["update_reservation_flights"].final_success is succeeded
    assert not usage["get_reservation_details"].final_success
