"""Runs of a task family as family_induction and family_insights read them (Member)."""

from experiences.services.family_induction import Member

USER = "get_user_details <user_id from the request>"
RESERVATION = "get_reservation_details <reservation_id from get_user_details>"
CHANGE = "update_reservation_flights <reservation_id from get_user_details>"


def calls(*made, necessary=True):
    effects = {
        "get_user_details": "read",
        "get_reservation_details": "read",
        "transfer_to_human_agents": "hand_off",
    }
    return [
        {
            "tool": pattern.split(" ", 1)[0],
            "pattern": pattern,
            "effect": effects.get(pattern.split(" ", 1)[0], "write"),
            "errored": False,
            "necessary": necessary,
        }
        for pattern in made
    ]


def success(trace_id, *made):
    return Member(trace_id, True, calls(*made))


def failure(trace_id, *made):
    return Member(trace_id, False, calls(*made, necessary=False))


FAMILY = [
    success(1, USER, RESERVATION, CHANGE),
    success(2, USER, RESERVATION, RESERVATION, CHANGE),
    success(3, USER, RESERVATION, CHANGE),
    failure(4, USER, CHANGE),
    failure(5, USER, CHANGE, RESERVATION),
    failure(6, CHANGE),
]
