"""HindsightClient's synchronous calls against the real site over HTTP."""

from __future__ import annotations

import time

import pytest

from hindsight_client import ApiError, ConnectionFailed, HindsightClient
from tests.support.api import trajectory
from tests.support.ports import free_port
from traces.models import Trace


def test_send_trace_stores_a_trajectory_and_is_idempotent(site):
    client = site.client()

    first = client.send_trace(trajectory("run-1"))
    again = client.send_trace(trajectory("run-1"))

    assert first["id"] == again["id"] and first["external_id"] == "run-1"
    assert Trace.objects.filter(external_id="run-1").count() == 1
    assert [s["index"] for s in client.get_trace(first["id"])["steps"]] == [0, 1, 2]


def test_send_traces_answers_one_result_per_trace(site):
    results = site.client().send_traces([trajectory("a"), {"external_id": "b"}])

    assert [r["status"] for r in results] == ["created", "invalid"]


def test_a_422_carries_the_field_errors(site):
    with pytest.raises(ApiError) as raised:
        site.client().send_trace(trajectory("bad", outcome="great"))

    assert raised.value.status == 422 and not raised.value.is_transient
    assert any("outcome" in str(error["loc"]) for error in raised.value.detail)


def test_a_wrong_key_is_a_401_and_is_not_retried(site, relay):
    client = HindsightClient(relay.url, "hs_wrong")
    with pytest.raises(ApiError) as raised:
        client.send_trace(trajectory())

    assert raised.value.status == 401 and raised.value.detail == "Unauthorized"
    assert relay.statuses() == [401]


def test_a_5xx_is_retried_then_succeeds(site, relay):
    relay.fail_next(502, times=2)

    answer = site.client(relay.url).send_trace(trajectory("retried"))

    assert answer["external_id"] == "retried"
    assert relay.statuses() == [502, 502, 201]


def test_a_long_retry_after_is_not_waited_the_429_is_raised(site, relay):
    relay.fail_next(429, retry_after="30")
    began = time.monotonic()
    with pytest.raises(ApiError) as raised:
        site.client(relay.url).send_trace(trajectory())

    assert raised.value.status == 429 and raised.value.retry_after == 30
    assert time.monotonic() - began < 2


def test_an_unreachable_server_raises_connection_failed_after_the_retries():
    client = HindsightClient(f"http://127.0.0.1:{free_port()}", "k", timeout=1, retries=1)
    with pytest.raises(ConnectionFailed):
        client.send_trace(trajectory())


def test_the_base_url_may_include_the_api_prefix_or_not():
    assert HindsightClient("http://h:8000", "k").base_url == "http://h:8000/api/v1"
    assert HindsightClient("http://h:8000/api/v1/", "k").base_url == "http://h:8000/api/v1"
    with pytest.raises(ValueError):
        HindsightClient("localhost:8000", "k")
