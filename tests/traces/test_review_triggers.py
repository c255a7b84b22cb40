"""When a review runs: full by size, local around anomalies, skipped when short."""

import pytest

from tests.traces.review_builders import sv, tv
from traces.review.triggers import full_review_reason, is_dissatisfied, local_windows, skip_reason


@pytest.mark.parametrize(
    "text",
    [
        "That's not what I asked for",
        "it still doesn't work",
        "I already told you the namespace is prod",
        "why did you restart the database?",
        "wrong, the service is svc-b",
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
        "",
    ],
)
def test_ordinary_messages_are_not_dissatisfaction(text):
    assert not is_dissatisfied(text)


def test_full_review_by_events_tool_calls_or_duration(settings):
    settings.HINDSIGHT_REVIEW_MIN_EVENTS = 10
    settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS = 5
    settings.HINDSIGHT_REVIEW_MIN_SECONDS = 30
    short = tv(duration_ms=1000)
    assert full_review_reason(short, [sv(i, "llm_reasoning") for i in range(10)]) == "10 events"
    assert full_review_reason(short, [sv(i, tool="t") for i in range(5)]) == "5 tool calls"
    assert full_review_reason(tv(duration_ms=31_000), [sv(0, tool="t")]) == "31 s"
    assert full_review_reason(short, [sv(0, tool="t")]) is None


def test_skip_reason_says_what_was_missing():
    reason = skip_reason(tv(duration_ms=2000), [sv(0, tool="t"), sv(1, "user_input")])
    assert "2 events, 1 tool calls, 2 s" in reason and "≥ 10 events" in reason


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
