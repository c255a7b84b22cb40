"""Bodies over the server's limit against the production stack (`hindsight run --no-beat`:
gunicorn), which answers 413 before reading such a body and closes the connection: the client
sees a broken pipe while sending and must read that answer, not report a connection error."""

from __future__ import annotations

import pytest

from hindsight_client import HindsightClient, Limits, RequestTooLarge
from tests.support.api import trajectory
from tests.support.client import FAST_BACKOFF
from tests.support.launcher import SiteProcess
from tests.support.ports import free_port

pytestmark = pytest.mark.launcher

SIX_MB = 6 * 1024 * 1024
ABOVE_THE_SERVER = Limits(max_body_bytes=8 * SIX_MB)  # a client that believes the server takes more


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    site = SiteProcess(tmp_path_factory.mktemp("early-answers") / "data", free_port())
    site.start()
    yield site
    site.stop()


def test_a_body_the_server_refuses_before_reading_it_is_its_413_not_a_connection_error(server):
    client = HindsightClient(server.url, server.pipeline_key(), limits=ABOVE_THE_SERVER)
    big = trajectory("six-mb")
    big["steps"][0]["observation"] = "x" * SIX_MB

    with pytest.raises(RequestTooLarge) as raised:
        client.send_trace(big)
    assert not raised.value.client_side
    assert raised.value.detail.endswith("the limit is 5242880 bytes")

    with pytest.raises(RequestTooLarge) as raised:
        client.send_traces([trajectory("small"), big])
    assert not raised.value.client_side


def test_a_recorder_stores_6_mb_steps_cut_to_fit_and_completes(server):
    client = HindsightClient(server.url, server.pipeline_key())
    rec = client.recorder(
        agent="a", task="huge tool outputs", max_observation_chars=2 * SIX_MB, backoff=FAST_BACKOFF
    )
    rec.record_event(tool="ls", observation="before")
    rec.record_event(tool="cat", observation="o" * SIX_MB)
    rec.record_event("llm_reasoning", content="c" * SIX_MB)
    rec.record_event(tool="write", arguments={"path": "/x", "text": "a" * SIX_MB})
    rec.record_event(tool="ls", observation="after")

    assert rec.finish("success", wait=120)

    assert rec.error is None and rec.rejected_steps == []
    trace = client.get_trace(rec.trace_id)
    assert trace["is_complete"] and trace["outcome"] == "success"
    steps = trace["steps"]
    assert [s["index"] for s in steps] == list(range(5))
    assert steps[1]["is_observation_truncated"]  # the server keeps 64 KB of it anyway
    assert "cut by the client at" in steps[2]["content"][-100:]
    assert "cut by the client at" in steps[3]["arguments"]["text"][-100:]
    assert steps[4]["observation"] == "after"


def test_a_recorder_above_the_servers_limit_gets_its_413_and_the_step_fails_alone(server):
    client = HindsightClient(server.url, server.pipeline_key(), limits=ABOVE_THE_SERVER)
    rec = client.recorder(agent="a", task="limits out of step", backoff=FAST_BACKOFF)
    rec.record_event(tool="ls", observation="before")
    rec.record_event("llm_reasoning", content="c" * SIX_MB)
    rec.record_event(tool="ls", observation="after")

    assert rec.finish("partial", wait=120)

    [rejected] = rec.rejected_steps
    assert rejected.index == 1 and isinstance(rejected.error, RequestTooLarge)
    assert not rejected.error.client_side
    trace = client.get_trace(rec.trace_id)
    assert trace["is_complete"] and trace["outcome"] == "partial"
    assert [s["kind"] for s in trace["steps"]] == ["tool_call", "system", "tool_call"]
    assert "HTTP 413" in trace["steps"][1]["content"]
