"""The clauses a contrast appends are found again when a relabel rebuilds the rest of the
advice (distill_rederive keeps them; the LLM reviser gets the advice without them)."""

from experiences.services.distill_contrast import (
    CONTRAST_CLAUSES,
    advice_with_clause,
    contradiction_resolved,
)

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


FAILED_CLICK = 'click "button#subscribe": it returned "Error: email is required"'
INSTEAD = (
    ' Instead, type <email from the request> "input#email" (each), then click '
    '"button#subscribe" (that worked in another run of this task).'
)


def test_a_clause_with_parentheses_is_found_and_never_takes_the_advice_s_own_sentences():
    own = "When you use click: do not x: y. Instead, search <query from the request> (each)."
    assert CONTRAST_CLAUSES.findall(own + INSTEAD) == [INSTEAD]


def test_a_failure_s_do_not_of_the_call_that_worked_in_another_run_says_it_failed():
    """A web agent typed into the wrong field and clicked Subscribe: "do not click Subscribe
    … Instead, …, then click Subscribe" forbade the way that worked."""
    advice = f"When you use click: do not {FAILED_CLICK}.{INSTEAD}"
    assert contradiction_resolved(advice, FAILED_CLICK) == (
        'When you use click: click "button#subscribe" failed (it returned "Error: email is '
        f'required").{INSTEAD}'
    )
    # The way that worked never made the blamed call: "do not" stays.
    other = " Instead, press <key of the case> (that worked in another run of this task)."
    kept = f"When you use click: do not {FAILED_CLICK}.{other}"
    assert contradiction_resolved(kept, FAILED_CLICK) == kept


def test_a_task_s_second_failure_says_its_check_once_with_the_error_and_one_way_is_enough():
    """Two failed runs of a coding task: the success learned "Check submit …" twice, once with
    the error the tests returned; a failure contrasted with two successes, two ways."""
    plain = (
        " Check submit against every part of the request before you submit: it failed in an "
        "earlier run of this task (the run failed)."
    )
    advice = advice_with_clause(STRATEGY, plain)
    assert advice == STRATEGY + plain
    assert advice_with_clause(advice, CHECK) == STRATEGY + CHECK  # the one that says more
    assert advice_with_clause(STRATEGY + CHECK, plain) is None
    failure = f"When you use click: do not {FAILED_CLICK}.{INSTEAD}"
    other_way = " Instead, press <key of the case> (that worked in another run of this task)."
    assert advice_with_clause(failure, other_way) is None
