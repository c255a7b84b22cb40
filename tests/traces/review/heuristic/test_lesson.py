"""A change that failed and then worked with other arguments is taught as a call that can fail,
never "do not": the success's strategy makes that very change (the reviewer's template of
hand-built steps)."""

from tests.support.review_builders import request_for, sv, tv
from traces.review.heuristic.template import build_template
from traces.review.types import StepJudgement

TASK = "Upgrade reservation K1NW8N to business, user mia_li_3668"


def call(index, tool, arguments, result, error=False):
    return sv(index, tool=tool, arguments=arguments, observation=result, is_error=error)


def test_a_change_that_worked_with_another_payment_is_taught_as_one_that_can_fail():
    upgrade = {"reservation_id": "K1NW8N", "cabin": "business"}
    steps = [
        call(0, "get_user_details", {"user_id": "mia_li_3668"},
             '{"payment_methods": {"credit_card_4421": {}}, "reservations": ["K1NW8N"]}'),
        call(1, "get_reservation_details", {"reservation_id": "K1NW8N"}, '{"cabin": "economy"}'),
        call(2, "update_reservation_flights", {**upgrade, "payment_id": "gift_card_1"},
             "Error: payment method not found", error=True),
        call(3, "update_reservation_flights", {**upgrade, "payment_id": "credit_card_4421"},
             '{"reservation_id": "K1NW8N", "cabin": "business"}'),
    ]  # fmt: skip
    labels = {0: "necessary", 1: "necessary", 2: "failed", 3: "necessary"}
    template = build_template(
        request_for(tv(task=TASK, outcome="success"), steps),
        {i: StepJudgement(index=i, label=labels[i], reason="r", confidence=0.9) for i in labels},
    )
    assert "do not update_reservation_flights" not in template.experience.lower()
    assert template.experience.endswith(
        "update_reservation_flights <reservation_id from the request> <cabin from the request> "
        '… can fail (it returned "Error: payment method not found"): then change its arguments, '
        "do not repeat it."
    )
    assert template.experience.startswith("When you use update_reservation_flights, first ")
