"""A request's goal in a few of its own words (traces/review/request_goal.py): the condition of
a recipe for a tool every run calls."""

import pytest

from traces.review.request_goal import GOAL_WORDS, purpose, request_goal, shared_purpose


@pytest.mark.parametrize(
    ("request_text", "goal"),
    [
        # The goal ends where the request starts to say where: a preposition, a path.
        ("List all files on smbfs mounts", "list all files on smbfs mounts"),
        ("find files in the /workspace directory larger than 1 Kilobytes", "find files"),
        # Values never enter it: quoted, globs, numbers, ids.
        ("Count md5sum of all '*.py' files in /testbed folder.", "count md5sum of all files"),
        ("Remove all *.txt files, except keep.txt, under /system/folder1", "remove all files"),
        ("print top 3 largest files and /workspace", "print top largest files"),
        ("Remove files text2, text3, text4 in directory /system/folder1", "remove files"),
        ("Print reverse lookup for adress 127.0.0.1", "print reverse lookup for adress"),
        # A verb's form is the lists' ("prints" -> "print"), a leading adverb is no verb.
        ("Recursively prints all folders in the '/system' folder", "print all folders"),
        ("Copies the logs to /backup", "copy the logs"),
        # It does not end on "the", "of", "all".
        ("Calculate the md5 sum of the sorted list of md5 sums", "calculate the md5 sum"),
        ("Count the files residing in /testbed", "count the files"),
        ("Concatenate all .txt files residing in /system", "concatenate all files"),
        ("Unhide all hidden files in /workspace", "unhide all hidden files"),
        ("Show the size of all", "show the size"),
    ],
)
def test_the_goal_is_the_first_verb_and_its_object_without_the_case_values(request_text, goal):
    assert request_goal(request_text) == goal
    assert len(goal.split()) <= GOAL_WORDS


@pytest.mark.parametrize(
    "request_text",
    [
        "Which magazine was started first, Arthur's Magazine or First for Women?",
        "Hi, I want to change my flight",
        "i need a long clip-in hair extension which is natural looking",
        "",
        "Quickly",
    ],
)
def test_a_request_that_does_not_start_with_a_verb_has_no_goal(request_text):
    # A question or a wish names no step to take: "When you use bash to which …" would be noise.
    assert request_goal(request_text) == ""


def test_a_family_s_purpose_is_the_start_most_of_its_requests_share():
    assert shared_purpose(["remove all files", "remove all directories", "remove files"]) == (
        "remove"
    )
    assert shared_purpose(["count the lines", "count the lines of the logs"]) == "count the lines"
    # One run of two is no family's purpose; requests that share nothing have none.
    assert shared_purpose(["count the lines of the logs", "print the tree"]) == ""
    assert shared_purpose(["list all files"]) == "list all files"
    assert shared_purpose([]) == ""


def test_a_change_s_purpose_starts_with_the_change_asked():
    assert purpose("Find all *.tmp files under /testbed and delete them", changes_state=True) == (
        "delete"
    )
    assert purpose("Remove all empty files in /x", changes_state=True) == "remove all empty files"
    assert purpose("Find all *.tmp files under /testbed", changes_state=False) == "find all files"
    assert purpose("prune all the files in /workspace", changes_state=True) == (
        "prune all the files"
    )
