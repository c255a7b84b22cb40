"""When a review runs: full by size or by failure, local around anomalies, skipped when short."""

import os

import pytest

from tests.support.review_builders import sv, tv
from traces.review.triggers import (
    full_review_reason,
    is_dissatisfied,
    local_windows,
    short_review_reason,
    skip_reason,
)


@pytest.mark.parametrize(
    "text",
    [
        "That's not what I asked for",
        "it still doesn't work",
        "I already told you the namespace is prod",
        "why did you restart the database?",
        "wrong, the service is svc-b",
        "You gave me the wrong reservation",
        "I said economy and you booked the wrong cabin",
        "不对，我要的是生产环境",
        "还是不行",
    ],
)
def test_dissatisfaction_is_detected(text):
    assert is_dissatisfied(text)


@pytest.mark.parametrize(
    "text",
    [
        "Please check why the pod restarts",
        "no problem, thanks",
        "not bad at all, it works now",
        "what went wrong with the deploy?",
        "I apologize, I've realized I provided the wrong reservation ID.",
        "Sorry, I gave you the wrong order number: it is #W2378156",
        "My mistake, the namespace is prod",
        "",
    ],
)
def test_ordinary_messages_are_not_dissatisfaction(text):
    assert not is_dissatisfied(text)


THRESHOLDS = (
    "HINDSIGHT_REVIEW_MIN_EVENTS",
    "HINDSIGHT_REVIEW_MIN_TOOL_CALLS",
    "HINDSIGHT_REVIEW_MIN_SECONDS",
)
with_default_thresholds = pytest.mark.skipif(
    any(os.environ.get(name) for name in THRESHOLDS),
    reason="a review threshold is overridden in the environment",
)


@with_default_thresholds
def test_the_default_thresholds_are_10_events_3_tool_calls_or_30_seconds(settings):
    assert settings.HINDSIGHT_REVIEW_MIN_EVENTS == 10
    assert settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS == 3
    assert settings.HINDSIGHT_REVIEW_MIN_SECONDS == 30


@with_default_thresholds
def test_by_default_a_successful_run_with_three_tool_calls_is_reviewed():
    steps = [sv(i, tool="t", arguments={"i": i}) for i in range(3)]
    assert full_review_reason(tv(outcome="success", duration_ms=1000), steps) == "3 tool calls"


@with_default_thresholds
def test_by_default_a_successful_run_with_two_tool_calls_gets_no_full_review():
    trace = tv(outcome="success", duration_ms=2000)
    steps = [sv(0, "user_input"), sv(1, tool="t"), sv(2, tool="u")]

    assert full_review_reason(trace, steps) is None
    reason = skip_reason(trace, steps)
    assert "3 events, 2 tool calls, 2 s" in reason
    assert "≥ 10 events" in reason and "≥ 3 tool calls" in reason and "≥ 30 s" in reason
    assert "a failed run with a tool call" in reason
    assert "a shorter run is reviewed offline when it called a tool" in reason


@with_default_thresholds
def test_by_default_a_successful_run_with_two_tool_calls_gets_a_short_review():
    trace = tv(outcome="success", duration_ms=2000)
    steps = [sv(0, "user_input"), sv(1, tool="t"), sv(2, tool="u")]
    assert short_review_reason(trace, steps) == "short: 2 tool call(s)"


def test_a_short_run_without_a_tool_call_gets_no_short_review():
    steps = [sv(0, "user_input"), sv(1, "llm_reasoning")]
    assert short_review_reason(tv(outcome="success", duration_ms=1000), steps) is None


def test_short_reviews_can_be_turned_off(settings):
    settings.HINDSIGHT_REVIEW_SHORT_RUNS = False
    steps = [sv(0, tool="t")]
    assert short_review_reason(tv(outcome="success", duration_ms=1000), steps) is None
    assert "reviewed offline" not in skip_reason(tv(duration_ms=1000), steps)


@with_default_thresholds
def test_by_default_a_failed_run_with_two_tool_calls_is_reviewed():
    trace = tv(outcome="failure", duration_ms=2000)
    steps = [sv(0, tool="t"), sv(1, tool="u", is_error=True)]
    assert full_review_reason(trace, steps) == "a failure with 2 tool call(s)"


def test_full_review_by_events_tool_calls_or_duration(settings):
    settings.HINDSIGHT_REVIEW_MIN_EVENTS = 10
    settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS = 5
    settings.HINDSIGHT_REVIEW_MIN_SECONDS = 30
    short = tv(duration_ms=1000)
    assert full_review_reason(short, [sv(i, "llm_reasoning") for i in range(10)]) == "10 events"
    assert full_review_reason(short, [sv(i, tool="t") for i in range(5)]) == "5 tool calls"
    assert full_review_reason(tv(duration_ms=31_000), [sv(0, tool="t")]) == "31 s"
    assert full_review_reason(short, [sv(0, tool="t")]) is None


@pytest.mark.parametrize("outcome", ["failure", "partial"])
def test_a_run_that_went_wrong_with_one_tool_call_is_always_reviewed(settings, outcome):
    settings.HINDSIGHT_REVIEW_MIN_EVENTS = 10
    settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS = 5
    settings.HINDSIGHT_REVIEW_MIN_SECONDS = 30
    trace = tv(outcome=outcome, duration_ms=1000)
    assert full_review_reason(trace, [sv(0, tool="t")]) == f"a {outcome} with 1 tool call(s)"


def test_a_failed_run_without_a_tool_call_is_not_reviewed_for_its_failure(settings):
    settings.HINDSIGHT_REVIEW_MIN_EVENTS = 10
    settings.HINDSIGHT_REVIEW_MIN_SECONDS = 30
    steps = [sv(0, "user_input"), sv(1, "llm_reasoning")]
    assert full_review_reason(tv(outcome="failure", duration_ms=1000), steps) is None


@pytest.mark.parametrize("outcome", ["success", "unknown"])
def test_a_short_run_that_did_not_fail_is_not_reviewed_for_its_outcome(settings, outcome):
    settings.HINDSIGHT_REVIEW_MIN_EVENTS = 10
    settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS = 3
    settings.HINDSIGHT_REVIEW_MIN_SECONDS = 30
    steps = [sv(0, tool="t"), sv(1, tool="u")]
    assert full_review_reason(tv(outcome=outcome, duration_ms=1000), steps) is None


def test_a_size_threshold_is_named_before_the_failure_rule(settings):
    settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS = 3
    steps = [sv(i, tool="t", arguments={"i": i}) for i in range(3)]
    assert full_review_reason(tv(outcome="failure", duration_ms=1000), steps) == "3 tool calls"


def test_skip_reason_says_what_was_missing(settings):
    settings.HINDSIGHT_REVIEW_MIN_EVENTS = 10
    settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS = 3
    settings.HINDSIGHT_REVIEW_MIN_SECONDS = 30
    reason = skip_reason(tv(duration_ms=2000), [sv(0, tool="t"), sv(1, "user_input")])
    assert "2 events, 1 tool calls, 2 s" in reason
    assert "≥ 10 events" in reason and "≥ 3 tool calls" in reason and "≥ 30 s" in reason


def test_two_consecutive_failed_tool_calls_open_a_local_window(settings):
    settings.HINDSIGHT_LOCAL_WINDOW_STEPS = 1
    steps = [
        sv(0, tool="a"),
        sv(1, tool="b"),
        sv(2, tool="c", is_error=True),
        sv(3, "llm_reasoning"),
        sv(4, tool="c", is_error=True),
        sv(5, tool="d"),
        sv(6, tool="e"),
    ]
    windows = local_windows(steps)

    assert [(w.kind, w.trigger, w.start, w.end) for w in windows] == [
        ("local", "consecutive_failures", 1, 5)
    ]


def test_a_single_failure_is_not_an_anomaly():
    assert local_windows([sv(0, tool="a", is_error=True), sv(1, tool="b")]) == []


def test_dissatisfaction_window_looks_back(settings):
    settings.HINDSIGHT_LOCAL_WINDOW_STEPS = 1
    steps = [sv(i, tool="t", arguments={"i": i}) for i in range(6)]
    steps.append(sv(6, "user_input", content="that's wrong, it is the prod cluster"))
    steps.append(sv(7, tool="t", arguments={"i": 7}))
    (window,) = local_windows(steps)
    assert (window.trigger, window.start, window.end) == ("dissatisfaction", 3, 7)


def test_two_anomalies_framing_the_same_steps_are_one_window(settings):
    # Failures the user then complained about: both windows end at the run's end and start at
    # its beginning. A review is unique per window: two would break the whole review.
    settings.HINDSIGHT_LOCAL_WINDOW_STEPS = 3
    steps = [sv(0, "user_input", content="check the DB"), sv(1, tool="sql", is_error=True),
             sv(2, tool="sql", is_error=True), sv(3, "user_input", content="no, that's wrong"),
             sv(4, tool="sql", arguments={"q": 1})]  # fmt: skip
    windows = local_windows(steps)
    assert [(w.trigger, w.start, w.end) for w in windows] == [("consecutive_failures", 0, 4)]


def test_a_call_repeated_more_than_three_times_is_a_loop(settings):
    settings.HINDSIGHT_LOOP_REPEATS = 3
    same = {"name": "web"}
    three = [sv(i, tool="docker_restart", arguments=same) for i in range(3)]
    assert local_windows(three + [sv(3, tool="other")]) == []
    four = three + [sv(3, tool="docker_logs"), sv(4, tool="docker_restart", arguments=same)]
    (window,) = local_windows(four)
    assert (window.trigger, window.start, window.end) == ("loop", 0, 4)


def test_same_tool_with_other_arguments_is_not_a_loop():
    steps = [sv(i, tool="docker_logs", arguments={"tail": i}) for i in range(6)]
    assert local_windows(steps) == []
