"""The recorder across a real server outage: `hindsight run --no-beat` as a subprocess on a temp
data dir and a fixed port, stopped with SIGTERM mid-recording and started again on the same
data dir and port."""

from __future__ import annotations

import time

import pytest

from hindsight_client import HindsightClient
from tests.support.client import FAST_BACKOFF
from tests.support.launcher import SiteProcess
from tests.support.ports import free_port

pytestmark = pytest.mark.launcher


@pytest.fixture
def site_process(tmp_path):
    site = SiteProcess(tmp_path / "data", free_port())
    site.start()
    yield site
    site.stop()


def test_a_server_stopped_and_restarted_mid_recording_loses_nothing(site_process):
    client = HindsightClient(site_process.url, site_process.pipeline_key())
    rec = client.recorder(
        agent="ops-bot",
        task="survive an outage",
        environment=["docker"],
        backoff=FAST_BACKOFF,
        batch_size=3,
    )
    for n in range(10):
        rec.record_event(tool="shell", arguments={"n": n}, observation=f"before {n}")
    assert rec.flush(30)

    site_process.stop()
    began = time.perf_counter()
    for n in range(10, 25):
        rec.record_event(tool="shell", arguments={"n": n}, observation=f"during {n}")
    recording_while_down = time.perf_counter() - began
    rec.finish("success", final_answer="still here")
    assert not rec.flush(1.0)  # the server is down: the steps wait in memory

    site_process.start()  # same data dir, same port
    assert rec.flush(60)

    trace = client.get_trace(rec.trace_id)
    assert trace["is_complete"] and trace["outcome"] == "success"
    assert trace["final_answer"] == "still here"
    assert [s["index"] for s in trace["steps"]] == list(range(25))
    assert [s["arguments"]["n"] for s in trace["steps"]] == list(range(25))
    assert recording_while_down < 0.1, f"15 events took {recording_while_down:.3f}s while down"
