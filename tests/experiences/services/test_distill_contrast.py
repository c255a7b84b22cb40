"""The clauses a contrast appends are found again when a relabel rebuilds the rest of the
advice (distill_rederive keeps them; the LLM reviser gets the advice without them)."""

from experiences.services.distill_contrast import CONTRAST_CLAUSES

STRATEGY = "When you use submit, first bash <command written for the case>; call it."
CHECK = (
    " Check submit against every part of the request before you submit: it failed in an "
    'earlier run of this task (the run failed; bash had last returned "NameError: …").'
)
DO_NOT = (
    " Do not cancel_reservation <reservation_id from the request>: the run failed (an earlier "
    "run of this task failed that way)."
)


def test_both_kinds_of_a_success_s_contrast_are_found_and_stripped():
    advice = STRATEGY + CHECK + DO_NOT
    assert CONTRAST_CLAUSES.findall(advice) == [CHECK, DO_NOT]
    assert CONTRAST_CLAUSES.sub("", advice) == STRATEGY
