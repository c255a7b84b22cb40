"""The recorder against the real site over HTTP (pytest-django's live server), with a relay in
front of it to slow it down, take it away, or make it fail."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hindsight_client import ApiError, QueueFull, RecorderError
from tests.support.client import FAST_BACKOFF
from tests.support.waiting import wait_for
from traces.models import Step, Trace

ROOT = Path(__file__).resolve().parents[3]


def stored(external_id: str) -> tuple[Trace, list[Step]]:
    trace = Trace.objects.get(external_id=external_id)
    return trace, list(trace.steps.order_by("index"))


def test_a_recorded_trajectory_arrives_complete_with_its_steps_in_order(site):
    client = site.client()
    rec = client.recorder(agent="ops-bot", task="Why does web restart?", environment=["docker"])
    rec.user_input("web keeps restarting")
    rec.reasoning("check the container state first")
    for n in range(25):  # more than one batch
        rec.record_event(tool="docker", arguments={"n": n}, observation=f"line {n}")
    rec.record_event(tool="docker", arguments={"n": 99}, observation="OOMKilled", is_error=True)

    assert rec.finish("success", final_answer="raise the memory limit", wait=15)

    trace, steps = stored(rec.external_id)
    assert trace.is_complete and trace.outcome == "success"
    assert trace.final_answer == "raise the memory limit"
    assert trace.environment == ["docker"] and trace.agent == "ops-bot"
    assert [s.index for s in steps] == list(range(28))
    assert [s.kind for s in steps[:3]] == ["user_input", "llm_reasoning", "tool_call"]
    assert [s.arguments for s in steps[2:27]] == [{"n": n} for n in range(25)]
    assert steps[-1].is_error and not steps[-2].is_error
    assert steps[3].context["latest_user_input"] == "web keeps restarting"
    assert steps[3].context["task_goal"] == "Why does web restart?"
    assert rec.trace_id == trace.pk and rec.pending == 0 and rec.is_complete


def test_the_context_manager_finishes_with_success_or_the_outcome_set(site):
    client = site.client()
    with client.recorder(agent="a", task="t1") as plain:
        plain.record_event(tool="ls")
    with client.recorder(agent="a", task="t2") as partial:
        partial.record_event(tool="ls")
        partial.set_outcome("partial", final_answer="half done")

    assert plain.flush(15) and partial.flush(15)
    assert Trace.objects.get(external_id=plain.external_id).outcome == "success"
    trace = Trace.objects.get(external_id=partial.external_id)
    assert (trace.outcome, trace.final_answer) == ("partial", "half done")


def test_the_context_manager_records_the_exception_and_finishes_with_failure(site):
    client = site.client()
    with pytest.raises(KeyError):
        with client.recorder(agent="a", task="t") as rec:
            rec.record_event(tool="ls")
            raise KeyError("missing")

    assert rec.flush(15)
    trace, steps = stored(rec.external_id)
    assert trace.outcome == "failure"
    assert steps[-1].kind == "system" and steps[-1].is_error
    assert "KeyError" in steps[-1].content


def test_step_times_a_tool_call_and_marks_an_exception_as_a_failed_step(site):
    rec = site.client().recorder(agent="a", task="t")
    with rec.step("http_get", {"url": "http://x/health"}) as call:
        time.sleep(0.05)
        call.observation = {"status": 200}
    with pytest.raises(TimeoutError):
        with rec.step("http_get", {"url": "http://x/slow"}):
            raise TimeoutError("read timed out")
    rec.finish("failure", wait=15)

    _, (ok, failed) = stored(rec.external_id)
    assert not ok.is_error and ok.duration_ms >= 50 and "200" in ok.observation
    assert failed.is_error and failed.error_type == "TimeoutError"
    assert "read timed out" in failed.observation


def test_record_event_returns_at_once_while_the_server_is_slow(site, relay):
    relay.delay = 1.0
    rec = site.client(relay.url).recorder(agent="a", task="t")

    began = time.perf_counter()
    for n in range(200):
        rec.record_event(tool="ls", arguments={"n": n})
    elapsed = time.perf_counter() - began

    assert elapsed < 0.2, f"200 events took {elapsed:.3f}s"
    rec.stop()


def test_record_event_returns_at_once_while_the_server_is_down(site, relay):
    relay.down()
    rec = site.client(relay.url).recorder(agent="a", task="t")

    began = time.perf_counter()
    for n in range(200):
        assert rec.record_event(tool="ls", arguments={"n": n})
    elapsed = time.perf_counter() - began

    assert elapsed < 0.2, f"200 events took {elapsed:.3f}s"
    assert rec.pending == 200
    rec.stop()


def test_events_recorded_while_the_server_is_down_arrive_once_it_is_back(site, relay):
    relay.down()
    client = site.client(relay.url)
    rec = client.recorder(agent="a", task="t", backoff=FAST_BACKOFF)
    for n in range(30):
        rec.record_event(tool="ls", arguments={"n": n})
    rec.finish("success")
    assert not rec.flush(0.5)  # still down: nothing can be stored

    relay.up()  # same port
    assert rec.flush(15)

    trace, steps = stored(rec.external_id)
    assert trace.is_complete and [s.arguments["n"] for s in steps] == list(range(30))


def test_5xx_and_429_are_retried_and_retry_after_is_honoured(site, relay):
    relay.fail_next(503, times=2)
    relay.fail_next(429, retry_after="1")
    rec = site.client(relay.url).recorder(agent="a", task="t", backoff=FAST_BACKOFF)
    began = time.monotonic()
    rec.record_event(tool="ls")
    rec.finish("success", wait=15)

    assert time.monotonic() - began >= 1.0  # the Retry-After second was waited
    assert relay.statuses()[:3] == [503, 503, 429]
    assert relay.paths("POST")[:4] == ["/api/v1/traces/open"] * 4
    trace, steps = stored(rec.external_id)
    assert trace.is_complete and len(steps) == 1


def test_a_batch_whose_answer_was_lost_is_resent_and_stored_once(site, relay):
    rec = site.client(relay.url).recorder(agent="a", task="t", backoff=FAST_BACKOFF, batch_size=5)
    wait_for(lambda: rec.trace_id is not None)
    relay.lose_answers = 3  # the next steps request is stored, its answer lost, three times
    for n in range(5):
        rec.record_event(tool="ls", arguments={"n": n})
    rec.finish("success", wait=15)

    steps_calls = [p for p in relay.paths("POST") if p.endswith("/steps")]
    assert len(steps_calls) == 4
    _, steps = stored(rec.external_id)
    assert [s.arguments["n"] for s in steps] == [0, 1, 2, 3, 4]


def test_a_full_queue_drops_events_counts_them_and_says_so_in_the_trace(site, relay):
    relay.down()
    client = site.client(relay.url)
    rec = client.recorder(agent="a", task="t", max_queue=5, put_timeout=0.01, backoff=FAST_BACKOFF)
    results = [rec.record_event(tool="ls", arguments={"n": n}) for n in range(20)]

    assert results.count(False) == rec.dropped >= 14
    relay.up()
    rec.finish("success", wait=15)
    _, steps = stored(rec.external_id)
    kept = [s.arguments["n"] for s in steps if s.kind == "tool_call"]
    assert kept == sorted(kept) and len(kept) == 20 - rec.dropped
    assert steps[-1].kind == "system"
    assert f"{rec.dropped} events were dropped" in steps[-1].content


def test_a_full_queue_raises_when_overflow_is_raise(site, relay):
    relay.down()
    rec = site.client(relay.url).recorder(
        agent="a", task="t", max_queue=2, put_timeout=0.01, overflow="raise"
    )
    with pytest.raises(QueueFull):
        for n in range(10):
            rec.record_event(tool="ls", arguments={"n": n})
    assert rec.dropped == 1
    rec.stop()


def test_a_wrong_key_stops_the_recorder_at_once_and_is_not_retried(site, relay):
    rec = site.client().__class__(relay.url, "hs_wrong").recorder(agent="a", task="t")
    rec.record_event(tool="ls")

    with pytest.raises(RecorderError) as raised:
        rec.flush(5)
    assert isinstance(raised.value.__cause__, ApiError) and raised.value.__cause__.status == 401
    assert raised.value.unsent == 1
    assert not rec.record_event(tool="ls")  # later events are dropped, not queued
    with pytest.raises(RecorderError):
        rec.finish("success", wait=5)
    time.sleep(0.3)
    assert relay.statuses() == [401]  # one try, no retries


def test_a_422_names_the_field_and_is_not_retried(site, relay):
    rec = site.client(relay.url).recorder(agent="a", task="t", environment=["x" * 101])
    with pytest.raises(RecorderError) as raised:
        rec.flush(5)

    error = rec.error
    assert error is not None and error.status == 422
    assert "environment" in str(error.detail)
    assert "HTTP 422" in str(raised.value)
    assert relay.statuses() == [422]


def test_invalid_events_are_refused_in_the_agents_thread(site):
    rec = site.client().recorder(agent="a", task="t")
    with pytest.raises(ValueError, match="needs a 'tool'"):
        rec.record_event("tool_call")
    with pytest.raises(ValueError, match="kind must be one of"):
        rec.record_event("thought", content="x")
    rec.finish("success", wait=15)
    with pytest.raises(RuntimeError, match="finished"):
        rec.record_event(tool="ls")


def test_an_unfinished_recorder_is_finished_and_flushed_at_interpreter_exit(site):
    script = textwrap.dedent(
        f"""
        from hindsight_client import HindsightClient
        rec = HindsightClient({site.url!r}, {site.key!r}).recorder(
            agent="a", task="t", external_id="left-open")
        for n in range(40):
            rec.record_event(tool="ls", arguments={{"n": n}})
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stderr
    assert "was not finished; finishing it at exit as 'unknown'" in done.stderr
    trace, steps = stored("left-open")
    assert trace.is_complete and trace.outcome == "unknown" and len(steps) == 40


def test_the_exit_flush_waits_a_bounded_time_when_the_server_is_down(relay, site):
    relay.down()
    script = textwrap.dedent(
        f"""
        from hindsight_client import HindsightClient
        rec = HindsightClient({relay.url!r}, "k").recorder(agent="a", task="t", exit_timeout=1)
        rec.record_event(tool="ls")
        """
    )
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0 and time.monotonic() - began < 10
    assert "events not sent before exit" in done.stderr
