"""Which served items are the query's own case, what of them is served: the replay, a failed
run's contrast with its case's success, and not a longer way the case was done without (pure
functions of items and their cases)."""

from dataclasses import replace

from experiences.services.recall_cases import (
    Case,
    _case_ids,
    _changes,
    _codes,
    _handed_off,
    contrasted,
    is_same_case,
    request_values,
    without_longer_ways,
)
from tests.support.recall_items import recall_item as item
from traces.review.values import case_identifiers


def test_a_booking_code_in_capitals_is_an_id_where_the_run_called_a_tool_with_it():
    query = "Hi! I need help with my reservation. My reservation ID is HXDUBJ. PLEASE hurry."
    assert {"hxdubj", "please"} <= case_identifiers(query) | _codes(query)
    request = "I'd like to change my flight in reservation HXDUBJ. PLEASE help."
    replay = 'The same case ran before (failure): get_reservation_details "HXDUBJ"; do not …'
    assert _case_ids(request, replay) == {"hxdubj"}  # "PLEASE" went to no tool
    assert _case_ids(request, "The same case ran before (success): answered.") == set()


def test_the_same_case_names_the_query_s_ids_or_asks_nearly_the_same_naming_no_other(settings):
    settings.HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY = 0.5
    settings.HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY = 0.92
    user, other = {"sophia_silva_7557", "h8q05l"}, {"amelia_rossi_1297", "si5ukw"}
    assert is_same_case(user, {"sophia_silva_7557"}, 0.6)  # the same user asking a like thing
    assert not is_same_case(user, {"sophia_silva_7557"}, 0.4)  # ... something else
    assert not is_same_case(user, other, 0.97)  # two users asking alike: two cases
    assert is_same_case(set(), other, 0.95)  # the query names no id: nearly the same request
    assert is_same_case(user, set(), 0.95)
    assert not is_same_case(set(), set(), 0.9)


def test_a_nearly_equal_request_that_lacks_a_value_the_query_names_is_another_case(settings):
    # Served as "the same case", the replay of "remove all *.txt files … 5 minutes ago" would
    # have deleted keep.txt too.
    settings.HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY = 0.92
    query = 'Remove all *.txt files, except "keep.txt", under /system/folder1 older than 5 min'
    earlier = "Remove all *.txt files under the /system/folder1 directory older than 5 minutes"
    assert request_values(query) - request_values(earlier) == {"keep.txt"}
    assert not is_same_case(set(), set(), 0.954, new_values=True)
    assert is_same_case(set(), set(), 0.954, new_values=False)
    # Values, not words: a number, a file pattern; a question mark ends a question.
    assert request_values("Find foo?? files modified 7 days ago. Why?") == {"foo??", "7"}
    # A shared id decides alone: the same user may ask with other values.
    assert is_same_case({"mia_li_3668"}, {"mia_li_3668"}, 0.6, new_values=True)


def test_a_failed_run_is_contrasted_only_with_changes_recorded_and_agreed_on():
    cancel = {"tool": "cancel_reservation", "effect": "write", "errored": False,
              "literal": 'cancel_reservation "K1NW8N"'}  # fmt: skip
    read = {"tool": "get_user_details", "effect": "read", "errored": False}
    assert _changes([read, cancel, cancel]) == ('cancel_reservation "K1NW8N"',)
    assert _changes([read, cancel | {"errored": True}]) == ()
    assert _changes([read, {k: v for k, v in cancel.items() if k != "literal"}]) is None
    assert _changes('[{"tool": "t", "effect": "read", "errored": false}]') == ()

    failed = item(1, 0.9, polarity="failure", same_case=True)
    ok = item(2, 0.8, same_case=True)
    cases = {1: Case(True, "The same case ran before (failure).", changes=()),
             2: Case(True, "The same case ran before (success).",
                     changes=('cancel_reservation "K1NW8N"',))}  # fmt: skip
    told = contrasted([failed, ok], cases)[1].replay
    assert told == ("This case's successful run also made cancel_reservation \"K1NW8N\"; the "
                    "failed run below did not. The same case ran before (failure).")  # fmt: skip
    # Not recorded (reviewed before the changes were kept), or successes that disagree: as is.
    unknown = cases | {1: replace(cases[1], changes=None)}
    assert contrasted([failed, ok], unknown)[1].replay == cases[1].replay
    other = item(3, 0.7, same_case=True)
    disagree = cases | {3: Case(True, "The same case ran before (success).", changes=())}
    assert contrasted([failed, ok, other], disagree)[1].replay == cases[1].replay


CANCEL = 'cancel_reservation "K1NW8N"'


def test_a_success_that_handed_over_after_the_changes_another_made_alone_is_left_out():
    handed, finished, other = (item(1, 0.9, same_case=True), item(2, 0.8, same_case=True),
                               item(3, 0.7, same_case=True))  # fmt: skip
    failed, new_case = item(4, 0.6, same_case=True, polarity="failure"), item(5, 0.5)
    cases = {1: Case(True, "handed over", changes=(CANCEL,), handed_off=True),
             2: Case(True, "cancelled", changes=(CANCEL,)),
             3: Case(True, "changed nothing, handed over", changes=(), handed_off=True),
             4: Case(True, "failed, handed over", changes=(CANCEL,), handed_off=True),
             5: Case()}  # fmt: skip
    kept = without_longer_ways([handed, finished, other, failed, new_case], cases)
    # The case was done with the same change and no hand-off: the hand-off was not needed. A
    # success with other changes (another request of the same user) and a failure stay.
    assert [i.experience.id for i in kept] == [2, 3, 4, 5]
    # With no success of the same changes that did without the hand-off, every item stays.
    assert len(without_longer_ways([handed, other, failed], cases)) == 3
    # Changes not recorded (reviewed before they were kept): nothing to compare, kept.
    unknown = cases | {2: replace(cases[2], changes=None)}
    assert len(without_longer_ways([handed, finished], unknown)) == 2
    # Not the same case: the query's case is another, nothing is compared.
    elsewhere = cases | {2: replace(cases[2], same_instance=False)}
    assert len(without_longer_ways([handed, finished], elsewhere)) == 2


def test_a_hand_off_counts_only_where_it_worked():
    hand_off = {"tool": "transfer_to_human_agents", "effect": "hand_off", "errored": False}
    assert _handed_off([hand_off])
    assert not _handed_off([hand_off | {"errored": True}])
    assert not _handed_off('[{"tool": "t", "effect": "write", "errored": false}]')


def test_a_path_is_a_place_many_cases_work_in_not_the_case():
    # Two shell tasks in one directory ("copy the FooBar files to …/tmp", "delete the files of
    # …/tmp older than 2 days") were one case: one's failed replay was served to the other.
    assert (
        case_identifiers("Copy the FooBar files to /testbed/dir3/subdir1/subsubdir1/tmp") == set()
    )
    assert case_identifiers("GET /users/mia_li_3668/orders") == {"mia_li_3668"}  # its parts count
