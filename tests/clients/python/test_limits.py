"""The client never wedges on what the server refuses: it keeps to the server's size limits, a
step the server refuses fails alone, and the errors say what happened. Against the real site
over HTTP (pytest-django's live server, with its limits lowered through `settings` where a
small limit keeps the test quick), with the relay where a server failing on one value is
needed."""

from __future__ import annotations

import json

import pytest

from hindsight_client import ApiError, InvalidRequest, Limits, RequestTooLarge, StepRejected
from tests.support.api import trajectory
from tests.support.client import FAST_BACKOFF
from traces.models import Step, Trace

SMALL = 64 * 1024  # a body limit small enough to overrun with a few steps


def stored(external_id: str) -> tuple[Trace, list[Step]]:
    trace = Trace.objects.get(external_id=external_id)
    return trace, list(trace.steps.order_by("index"))


@pytest.fixture
def small_server(settings):
    """The live server refuses bodies over SMALL bytes, as one configured so would."""
    settings.HINDSIGHT_MAX_BODY_BYTES = SMALL
    return settings


# ---------------------------------------------------------------------- synchronous calls


def test_a_body_over_the_limit_is_refused_unsent_with_a_413(site, relay):
    client = site.client(relay.url)
    big = trajectory("too-big")
    big["steps"][0]["observation"] = "x" * 6_000_000

    with pytest.raises(RequestTooLarge) as raised:
        client.send_trace(big)

    error = raised.value
    assert isinstance(error, ApiError) and error.status == 413 and error.client_side
    assert "the limit is 5242880 bytes" in error.detail
    assert relay.seen == []  # nothing was sent, not even once
    assert not Trace.objects.filter(external_id="too-big").exists()


def test_the_servers_413_is_a_request_too_large_carrying_its_detail(site, small_server):
    # The client's limits are above the server's: the server refuses, the client says why.
    client = site.client(limits=Limits(max_body_bytes=10 * SMALL))
    big = trajectory("over-the-servers-limit")
    big["steps"][0]["observation"] = "x" * (2 * SMALL)

    with pytest.raises(RequestTooLarge) as raised:
        client.send_trace(big)

    assert raised.value.status == 413 and not raised.value.client_side
    assert f"the limit is {SMALL} bytes" in raised.value.detail


def test_a_422_is_an_invalid_request_carrying_the_field_errors(site, relay):
    with pytest.raises(InvalidRequest) as raised:
        site.client(relay.url).send_trace(trajectory("nul", task="a\x00b"))

    assert raised.value.status == 422 and not raised.value.is_transient
    assert any("task" in str(error["loc"]) for error in raised.value.detail)
    assert relay.statuses() == [422]  # not retried


def test_send_traces_splits_what_is_over_the_limits_and_keeps_the_order(site, relay):
    limits = Limits(max_body_bytes=SMALL, max_batch=3)
    traces = [trajectory(f"many-{n}") for n in range(7)]
    for big in (3, 4):  # two of them do not fit in one request
        traces[big]["steps"][0]["observation"] = "y" * (SMALL * 6 // 10)

    results = site.client(relay.url, limits=limits).send_traces(traces)

    assert [r["external_id"] for r in results] == [f"many-{n}" for n in range(7)]
    assert {r["status"] for r in results} == {"created"}
    # [0, 1, 2] (max_batch), [3] (max_body_bytes), [4, 5, 6]
    assert relay.paths("POST") == ["/api/v1/traces/batch"] * 3
    assert max(relay.sizes) <= SMALL


def test_send_traces_refuses_a_trace_too_large_for_any_request_before_sending(site, relay):
    traces = [trajectory("fine"), trajectory("huge")]
    traces[1]["steps"][0]["observation"] = "z" * (2 * SMALL)

    with pytest.raises(RequestTooLarge) as raised:
        site.client(relay.url, limits=Limits(max_body_bytes=SMALL)).send_traces(traces)

    assert "trace 1 ('huge')" in raised.value.detail and raised.value.client_side
    assert relay.seen == []


# ---------------------------------------------------------------------- the recorder


def test_steps_over_the_body_limit_are_cut_to_fit_and_the_trace_completes(
    site, relay, small_server
):
    rec = site.client(relay.url, limits=Limits(max_body_bytes=SMALL)).recorder(
        agent="a", task="t", max_observation_chars=10 * SMALL, backoff=FAST_BACKOFF
    )
    rec.record_event(tool="ls", observation="small")
    rec.record_event(tool="cat", observation="o" * (3 * SMALL))
    rec.record_event("llm_reasoning", content="c" * (3 * SMALL))
    rec.record_event(tool="write", arguments={"path": "/x", "text": "a" * (3 * SMALL)})
    rec.user_input("u" * (3 * SMALL))  # and copied into every later step's context
    rec.record_event(tool="ls", observation="small again")

    assert rec.finish("success", wait=15)

    assert rec.error is None and rec.rejected_steps == []
    assert 413 not in relay.statuses() and max(relay.sizes) <= SMALL
    trace, steps = stored(rec.external_id)
    assert trace.is_complete and trace.outcome == "success"
    assert [s.index for s in steps] == list(range(6))
    cat, reasoning, write = steps[1], steps[2], steps[3]
    assert "cut by the client at" in cat.observation_raw
    assert reasoning.content.startswith("ccc") and "cut by the client at" in reasoning.content
    assert write.arguments["path"] == "/x" and "cut by the client" in write.arguments["text"]
    assert "cut by the client" in steps[5].context["latest_user_input"]
    assert steps[5].observation == "small again"


def test_batches_never_exceed_the_body_limit(site, relay, small_server):
    rec = site.client(relay.url, limits=Limits(max_body_bytes=SMALL)).recorder(
        agent="a", task="t", batch_size=20, backoff=FAST_BACKOFF
    )
    for n in range(20):
        rec.record_event(tool="ls", arguments={"n": n}, observation="s" * (SMALL // 5))

    assert rec.finish("success", wait=15)

    requests = zip(relay.paths(), relay.sizes, strict=True)
    steps_bodies = [size for path, size in requests if path.endswith("/steps")]
    assert len(steps_bodies) >= 5 and max(steps_bodies) <= SMALL
    assert 413 not in relay.statuses()
    _, steps = stored(rec.external_id)
    assert [s.arguments["n"] for s in steps] == list(range(20))


def test_one_poisoned_step_among_many_fails_alone_and_every_other_step_is_stored(site, relay):
    rec = site.client(relay.url).recorder(agent="a", task="t", batch_size=20, backoff=FAST_BACKOFF)
    for n in range(50):
        text = "a NUL \x00 here" if n == 23 else f"line {n}"
        rec.record_event(tool="shell", arguments={"n": n}, observation=text)
    rec.set_outcome("partial", final_answer="most of it")

    assert rec.finish("partial", final_answer="most of it", wait=30)

    assert rec.error is None
    [rejected] = rec.rejected_steps
    assert isinstance(rejected, StepRejected)
    assert (rejected.index, rejected.kind, rejected.tool) == (23, "tool_call", "shell")
    # The server answers 422 (a NUL cannot be stored); a server answering 500 is isolated too.
    assert rejected.status in (422, 500)
    trace, steps = stored(rec.external_id)
    assert trace.is_complete and (trace.outcome, trace.final_answer) == ("partial", "most of it")
    assert [s.index for s in steps] == list(range(50))
    assert [s.arguments["n"] for s in steps if s.kind == "tool_call"] == [
        n for n in range(50) if n != 23
    ]
    stand_in = steps[23]
    assert stand_in.kind == "system"
    assert "step 23 (tool_call shell) was not stored" in stand_in.content
    assert f"HTTP {rejected.status}" in stand_in.content


def test_a_step_the_server_answers_500_alone_is_isolated_once_the_server_answers_others(
    site, relay
):
    relay.answer_when(500, path="/steps", body=b"poisoned-value")
    rec = site.client(relay.url).recorder(agent="a", task="t", batch_size=10, backoff=FAST_BACKOFF)
    for n in range(30):
        rec.record_event(tool="ls", arguments={"n": n, "v": "poisoned-value" if n == 17 else ""})

    assert rec.finish("success", wait=30)

    [rejected] = rec.rejected_steps
    assert rejected.index == 17 and rejected.status == 500
    assert "/api/v1/traces?limit=1" in relay.paths("GET")  # the server was asked first
    trace, steps = stored(rec.external_id)
    assert trace.is_complete and len(steps) == 30
    assert [s.arguments["n"] for s in steps if s.kind == "tool_call"] == [
        n for n in range(30) if n != 17
    ]


def test_a_server_answering_500_to_everything_is_waited_out_no_step_is_blamed(site, relay):
    rec = site.client(relay.url).recorder(agent="a", task="t", batch_size=5, backoff=FAST_BACKOFF)
    assert rec.flush(15)  # opened
    relay.fail_next(500, times=15)  # every request for a while, the probe's too
    for n in range(5):
        rec.record_event(tool="ls", arguments={"n": n})

    assert rec.finish("success", wait=30)

    assert rec.rejected_steps == [] and rec.error is None
    _, steps = stored(rec.external_id)
    assert [s.arguments["n"] for s in steps] == list(range(5))


def test_a_step_over_a_lower_server_limit_fails_alone_with_the_413(site, relay, small_server):
    # The client believes the default 5 MB; the server was started with less.
    rec = site.client(relay.url).recorder(agent="a", task="t", backoff=FAST_BACKOFF)
    for n in range(6):
        rec.record_event(
            tool="ls", arguments={"n": n}, observation="b" * (2 * SMALL if n == 2 else 10)
        )

    assert rec.finish("success", wait=30)

    [rejected] = rec.rejected_steps
    assert rejected.index == 2 and isinstance(rejected.error, RequestTooLarge)
    assert f"the limit is {SMALL} bytes" in rejected.detail
    trace, steps = stored(rec.external_id)
    assert trace.is_complete and [s.kind for s in steps].count("tool_call") == 5


def test_a_completion_refused_for_its_text_completes_with_the_outcome_alone(site, relay):
    rec = site.client(relay.url).recorder(agent="a", task="t", backoff=FAST_BACKOFF)
    rec.record_event(tool="ls")

    assert rec.finish("failure", final_answer="nul \x00 answer", wait=15)

    assert rec.error is None
    assert isinstance(rec.completion_error, InvalidRequest)
    assert "final_answer" in json.dumps(rec.completion_error.detail)
    trace = Trace.objects.get(external_id=rec.external_id)
    assert trace.is_complete and trace.outcome == "failure" and trace.final_answer == ""


def test_events_past_the_servers_step_limit_are_dropped_counted_and_noted(site, settings):
    settings.HINDSIGHT_MAX_STEPS = 10
    rec = site.client(limits=Limits(max_steps=10)).recorder(agent="a", task="t", batch_size=4)
    for n in range(15):
        assert rec.record_event(tool="ls", arguments={"n": n})

    assert rec.finish("success", wait=15)

    assert rec.dropped == 6 and rec.error is None
    trace, steps = stored(rec.external_id)
    assert trace.is_complete and len(steps) == 10
    assert [s.arguments["n"] for s in steps[:9]] == list(range(9))
    assert steps[9].kind == "system"
    assert "6 events were dropped (the server stores at most 10 steps" in steps[9].content


def test_limits_refuse_values_the_server_cannot_have():
    with pytest.raises(ValueError):
        Limits(max_body_bytes=10)
    assert Limits().max_body_bytes == 5 * 1024 * 1024 and Limits().max_steps == 2000
