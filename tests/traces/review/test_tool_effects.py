"""The verbs of a request that ask for a change (tool_effects.change_verbs)."""

from traces.review.tool_effects import change_verbs


def test_the_verbs_of_changing_a_request_uses():
    assert change_verbs("Recursively removes all empty folders from /system") == ["remove"]
    assert change_verbs("Copies all files, then compress them") == ["copy", "compress"]
    # A participle or a noun of the list is no change asked for.
    assert change_verbs("Find the latest modified file; answer in the order of size") == []
